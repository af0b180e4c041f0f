package expr

import (
	"archive/zip"
	_ "embed" // zoneinfo.zip
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
)

// Time zones in expressions come from the tz database embedded here, never
// from the host: expr-lang's own date(s, layout, zone) and timezone(zone)
// read /usr/share/zoneinfo (or $ZONEINFO) first, so two workers with
// different tzdata could take different branches of one run, and a replay
// on the other would not match it. The zone "Local" and "" (the worker's
// own zone) are refused when evaluated, and so is a time's .Local(); a
// date without a zone is read in UTC. Runs from before this change keep
// expr-lang's lookups (Expr.LookUpZonesOnHost, version "embedded-zones").
//
// zoneinfo.zip is Go 1.26.8's lib/time/zoneinfo.zip (tzdata 2025c),
// copied as it is: the data changes only when this file is replaced.
//
//go:embed zoneinfo.zip
var zoneinfoZip string

// zoneData maps each zone name of the embedded database to its TZif data.
var zoneData = sync.OnceValues(func() (map[string]string, error) {
	z, err := zip.NewReader(strings.NewReader(zoneinfoZip), int64(len(zoneinfoZip)))
	if err != nil {
		return nil, err
	}
	data := make(map[string]string, len(z.File))
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		data[f.Name] = string(b)
	}
	return data, nil
})

// zones caches the zones loaded, by name: a *time.Location is read-only.
var zones sync.Map

// Zone is the named zone of the embedded tz database ("UTC",
// "Europe/Paris"); "Local" and "" are refused.
func Zone(name string) (*time.Location, error) {
	switch name {
	case "", "Local":
		return nil, fmt.Errorf("time zone %q is the zone of whichever worker evaluates it: name one, such as \"UTC\" or \"Europe/Paris\"", name)
	case "UTC":
		return time.UTC, nil
	}
	if loc, ok := zones.Load(name); ok {
		return loc.(*time.Location), nil
	}
	data, err := zoneData()
	if err != nil {
		return nil, err
	}
	tzif, ok := data[name]
	if !ok {
		return nil, fmt.Errorf("unknown time zone %s", name)
	}
	loc, err := time.LoadLocationFromTZData(name, []byte(tzif))
	if err != nil {
		return nil, err
	}
	zones.Store(name, loc)
	return loc, nil
}

// zoneBuiltins replace expr-lang's date and timezone by versions that
// take zones from Zone. They are untyped, as permissive as expr-lang's
// own (which accept any arguments when compiling): a frozen playbook that
// compiled before compiles now. The type checker of a submission
// (playbook/submit) checks them with expr-lang's types.
var zoneBuiltins = []expr.Option{
	expr.Function("timezone", func(args ...any) (any, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("timezone takes one zone name (got %d arguments)", len(args))
		}
		name, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("timezone takes a zone name, not %T", args[0])
		}
		return Zone(name)
	}),
	expr.Function("date", date),
	expr.Function(hostZoneRefusedName, func(...any) (any, error) {
		return nil, fmt.Errorf(".Local() is the zone of whichever worker evaluates it: use .UTC(), or .In(timezone(\"Europe/Paris\"))")
	}),
}

// date is expr-lang's date(s), date(s, layout), date(s, layout, zone),
// each optionally after a zone (date(timezone("Asia/Tokyo"), s)), with
// zones from Zone and UTC where none is given.
func date(args ...any) (any, error) {
	in := time.UTC
	if loc, ok := args[0].(*time.Location); ok {
		in, args = loc, args[1:]
	}
	if len(args) < 1 || len(args) > 3 {
		return nil, fmt.Errorf("date takes a date, a layout and a zone name (got %d arguments)", len(args))
	}
	text := make([]string, len(args))
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			return nil, fmt.Errorf("date takes strings, not %T", a)
		}
		text[i] = s
	}
	if len(text) == 3 {
		loc, err := Zone(text[2])
		if err != nil {
			return nil, err
		}
		in = loc
	}
	if len(text) >= 2 {
		return time.ParseInLocation(text[1], text[0], in)
	}
	for _, layout := range []string{"2006-01-02", "15:04:05", "2006-01-02 15:04:05", time.RFC3339, time.RFC822, time.RFC850, time.RFC1123} {
		if t, err := time.ParseInLocation(layout, text[0], in); err == nil {
			return t, nil
		}
	}
	return nil, fmt.Errorf("invalid date %s", text[0])
}

const hostZoneRefusedName = "hostZoneRefused"

// localCalls turns every method call .Local() into hostZoneRefused(), an
// error: a time in the worker's own zone.
type localCalls struct{}

func (localCalls) Visit(node *ast.Node) {
	call, ok := (*node).(*ast.CallNode)
	if !ok {
		return
	}
	if m, ok := call.Callee.(*ast.MemberNode); ok && m.Method {
		if prop, ok := m.Property.(*ast.StringNode); ok && prop.Value == "Local" && len(call.Arguments) == 0 {
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: hostZoneRefusedName}})
		}
	}
}

// readsZones tells whether a call names date, timezone or .Local(): the
// expressions whose value may depend on where zones are looked up.
func readsZones(node ast.Node) bool {
	switch n := node.(type) {
	case *ast.BuiltinNode:
		return n.Name == "date" || n.Name == "timezone"
	case *ast.CallNode:
		switch callee := n.Callee.(type) {
		case *ast.IdentifierNode:
			return callee.Value == "date" || callee.Value == "timezone"
		case *ast.MemberNode:
			prop, ok := callee.Property.(*ast.StringNode)
			return ok && callee.Method && prop.Value == "Local"
		}
	}
	return false
}

// LookUpZonesOnHost makes the expression, when it reads zones, ask onHost
// whether it looks them up on the host, as expr-lang's date and timezone
// do and as runs did before version "embedded-zones"; asked only when
// such an expression is evaluated.
func (e *Expr) LookUpZonesOnHost(onHost func() bool) {
	if e.readsZones {
		e.zonesOnHost = onHost
	}
}
