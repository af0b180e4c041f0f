package spec

import (
	"encoding/json"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A mapping's keys are declared once, in a table of keys: each key has its
// decoder, which d.fields calls, and its JSON Schema fragment, which
// Schema() puts in docs/playbook.schema.json. So the parser and the schema
// editors read cannot disagree on which keys exist.

// key is one key of a mapping: its schema and its decoder.
type key struct {
	schema jsonSchema
	decode func(v *yaml.Node) error
}

// keys is a mapping's table of keys, by name.
type keys map[string]key

// jsonSchema is a fragment of JSON Schema.
type jsonSchema = map[string]any

// extensionKeys are the x-... keys every mapping the language defines
// accepts and ignores: the place for anchors.
var extensionKeys = jsonSchema{"^x-": jsonSchema{"description": "An extension key: ignored; the place for YAML anchors."}}

// object is the schema of a mapping with exactly these keys, and x- keys.
func (k keys) object(desc string, required ...string) jsonSchema {
	props := jsonSchema{}
	for name, key := range k {
		props[name] = key.schema
	}
	s := jsonSchema{"type": "object", "properties": props, "patternProperties": extensionKeys, "additionalProperties": false}
	if desc != "" {
		s["description"] = desc
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// The fragments the tables use. d.str takes any scalar but null (a
// number or a boolean reads as its text), so a "string" key allows them.
func sString(desc string) jsonSchema {
	return jsonSchema{"type": []string{"string", "number", "boolean"}, "description": desc}
}

func sBool(desc string) jsonSchema { return jsonSchema{"type": "boolean", "description": desc} }

func sInt(desc string, min, max int) jsonSchema {
	s := jsonSchema{"type": "integer", "minimum": min, "description": desc}
	if max > 0 {
		s["maximum"] = max
	}
	return s
}

func sEnum(desc string, values ...string) jsonSchema {
	return jsonSchema{"enum": values, "description": desc}
}

func sMapping(desc string) jsonSchema { return jsonSchema{"type": "object", "description": desc} }

func sRef(def, desc string) jsonSchema {
	return jsonSchema{"$ref": "#/$defs/" + def, "description": desc}
}

// goDuration is what time.ParseDuration reads, without a sign.
const goDuration = `^\+?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// sDuration is a duration: Go's text ("1m30s") or a number of seconds.
func sDuration(desc string) jsonSchema {
	return jsonSchema{"description": desc, "anyOf": []jsonSchema{
		{"type": "number", "minimum": 0, "exclusiveMaximum": maxSeconds},
		{"type": "string", "pattern": goDuration},
	}}
}

// sStepRef is a step named by its name or as {step: NAME}.
func sStepRef() jsonSchema {
	return jsonSchema{"anyOf": []jsonSchema{
		{"type": []string{"string", "number", "boolean"}},
		{"type": "object", "properties": jsonSchema{"step": jsonSchema{"type": []string{"string", "number", "boolean"}}}, "required": []string{"step"}, "additionalProperties": false},
	}}
}

// sStepRefs is one step reference or a list of them.
func sStepRefs(desc string) jsonSchema {
	return jsonSchema{"description": desc, "anyOf": []jsonSchema{sStepRef(), {"type": "array", "items": sStepRef()}}}
}

// Schema is the JSON Schema (draft 2020-12) of a playbook file, made from
// the tables the parser reads keys with and from the tool kinds' types.
func Schema() jsonSchema {
	d := &decoder{lines: map[string]int{}}
	var node *yaml.Node
	var mode string
	var tools []jsonSchema
	defs := jsonSchema{
		"metadata":        d.metadataKeys(&Playbook{}).object("Who the playbook is.", "name"),
		"step":            d.stepKeys(&stepTarget{s: &Step{}}).object("One step of the graph.", "step"),
		"retry":           d.retryKeys(&Retry{}).object("The step's retry policy."),
		"next_item":       nextItemSchema(d.nextItemKeys(&NextRule{}, &node).object("A when/then branch, or the closing else.")),
		"notify":          d.notifyKeys(&Notify{}).object("Webhooks told of the run's outcome."),
		"webhook":         d.webhookKeys("", new(string)).object(""),
		"failure_handler": d.handlerKeys(&FailureHandler{}, &node).object("A named set of exit-code rules.", "name", "rules"),
		"loop":            d.loopKeys(&Loop{}, &mode).object("Runs the step's tool once per element of a list.", "in"),
		"schedule":        d.scheduleKeys(&Schedule{}).object("When `playbook schedule apply` makes the playbook run by itself."),
		"trigger":         d.triggerKeys(&Trigger{}).object("One thing that starts a run: webhook or after."),
		"webhook_trigger": d.webhookTriggerKeys(&WebhookTrigger{}).object("A signed POST to the worker's /hooks/NAME.", "name", "secret"),
		"after_trigger":   d.afterTriggerKeys(&AfterTrigger{}).object("Another playbook's run ending.", "playbook"),
		"concurrency":     d.concurrencyKeys(&Concurrency{}).object("How many runs with the same key run at once.", "limit"),
		"outputs":         d.outputKeys(&Files{}).object("The files a step hands on."),
		"inputs":          d.inputKeys(&Files{}).object("The stored files a step takes."),
	}
	rule := d.exitCodeRuleKeys(&ExitCodeRule{}, &node).object("Retries a process step whose exit code it matches.")
	rule["oneOf"] = []jsonSchema{
		{"required": []string{"exit_codes"}},
		{"required": []string{"match_all_exit_codes"}, "properties": jsonSchema{"match_all_exit_codes": jsonSchema{"const": true}}},
	}
	defs["exit_code_rule"] = rule
	for _, name := range ToolKinds() {
		kind := toolKinds[name]
		def := "tool_" + name
		defs[def] = kind.schema()
		tools = append(tools, jsonSchema{"$ref": "#/$defs/" + def})
	}
	defs["tool"] = jsonSchema{"description": "What the step runs: a kind and its fields.", "oneOf": tools}
	root := d.playbookKeys(&Playbook{}, &node, &node).object("A playbook file.", "metadata", "workflow")
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "playbook"
	root["$defs"] = defs
	return root
}

// SchemaJSON is Schema as the indented JSON `playbook schema` prints.
func SchemaJSON() []byte {
	b, err := json.MarshalIndent(Schema(), "", "  ")
	if err != nil {
		panic(err) // plain maps, lists and strings always marshal
	}
	return append(b, '\n')
}

// schema is a tool kind's schema: `kind` and its type's fields, with the
// shape each field type checks; fields tagged required:"true" must be given.
func (k toolKind) schema() jsonSchema {
	props := jsonSchema{"kind": jsonSchema{"const": k.spec.Kind(), "description": "The tool kind."}}
	required := []string{"kind"}
	t := reflect.TypeOf(k.spec).Elem()
	for i := range t.NumField() {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		s := fieldSchema(f.Type)
		s["description"] = f.Tag.Get("doc")
		props[name] = s
		if f.Tag.Get("required") == "true" {
			required = append(required, name)
		}
	}
	return jsonSchema{"type": "object", "description": "A " + k.spec.Kind() + " tool.", "properties": props, "patternProperties": extensionKeys, "required": required, "additionalProperties": false}
}

// schemer is a field type that gives its own schema.
type schemer interface{ schema() jsonSchema }

// fieldSchema is the schema of a tool field's type, as fieldCheck checks it.
func fieldSchema(t reflect.Type) jsonSchema {
	if s, ok := reflect.Zero(t).Interface().(schemer); ok {
		return s.schema()
	}
	if t.Kind() == reflect.String {
		return jsonSchema{"type": "string"}
	}
	return jsonSchema{}
}

func (Values) schema() jsonSchema { return jsonSchema{"type": "object"} }

func (ErrorType) schema() jsonSchema {
	return jsonSchema{"type": "string", "pattern": errorType.String()}
}

func (PlainValues) schema() jsonSchema {
	secret := jsonSchema{"type": "object", "required": []string{"secret"}, "additionalProperties": false,
		"properties": jsonSchema{"secret": jsonSchema{"type": "string", "pattern": secretName.String()}}}
	return jsonSchema{"type": "object", "additionalProperties": jsonSchema{"oneOf": []jsonSchema{
		{"type": []string{"string", "number", "boolean", "null"}}, secret}}}
}

func (EnvVars) schema() jsonSchema {
	s := PlainValues{}.schema()
	s["propertyNames"] = jsonSchema{"pattern": "^[^=\\x00]+$", "not": jsonSchema{"pattern": "^" + engineEnvPrefix}}
	return s
}

func (StatusCodes) schema() jsonSchema {
	code := jsonSchema{"type": "integer", "minimum": 100, "maximum": 599}
	return jsonSchema{"anyOf": []jsonSchema{code, {"type": "array", "items": code}}}
}

// sName is a name of namePattern.
func sName(desc string) jsonSchema {
	return jsonSchema{"type": "string", "pattern": namePattern.String(), "maxLength": MaxSubmittedName, "description": desc}
}

// nextItemSchema adds to a next item's schema what it needs: when and
// then, or else alone.
func nextItemSchema(s jsonSchema) jsonSchema {
	s["oneOf"] = []jsonSchema{
		{"required": []string{"when", "then"}, "not": jsonSchema{"required": []string{"else"}}},
		{"required": []string{"else"}, "not": jsonSchema{"anyOf": []jsonSchema{{"required": []string{"when"}}, {"required": []string{"then"}}}}},
	}
	return s
}
