package runs

import (
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"

	"playbook/interpreter/contract"
)

// The search attributes a run keeps current, as the client's SDK types
// them (their names and kinds are the contract's: contract.SearchAttributes).
var (
	AttrPlaybookName   = temporal.NewSearchAttributeKeyKeyword(contract.AttrPlaybookName)
	AttrPlaybookStatus = temporal.NewSearchAttributeKeyKeyword(contract.AttrPlaybookStatus)
)

// SearchAttributes are contract.SearchAttributes as a namespace registers
// them: what `playbook dev` and `playbook setup` give the server.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	out := make(map[string]enumspb.IndexedValueType, len(contract.SearchAttributes))
	for name, kind := range contract.SearchAttributes {
		out[name] = indexedType(kind)
	}
	return out
}

func indexedType(k contract.SearchAttributeKind) enumspb.IndexedValueType {
	if k == contract.KeywordList {
		return enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST
	}
	return enumspb.INDEXED_VALUE_TYPE_KEYWORD
}

// StartAttributes are the search attributes a run starts with.
func StartAttributes(name string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(AttrPlaybookName.ValueSet(name), AttrPlaybookStatus.ValueSet(contract.RunRunning))
}
