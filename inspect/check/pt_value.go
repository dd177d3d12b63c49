package check

import (
	"fmt"
	"math/big"

	"github.com/nlpodyssey/gopickle/types"

	"hsdb/engine/tensor"
)

// toValue converts what gopickle built into a Value tree. Anything but
// dicts, lists, tuples, scalars and rebuilt tensors names the global it came
// from (gopickle builds collections.OrderedDict, __builtin__.object and
// copy_reg._reconstructor itself, without asking FindClass).
func toValue(v interface{}, depth int) (*Value, error) {
	if depth > MaxPickleDepth {
		return nil, limitErr("containers nested deeper than %d levels", MaxPickleDepth)
	}
	switch x := v.(type) {
	case *tensor.Tensor:
		return &Value{Kind: KindTensor, Tensor: x}, nil
	case *big.Int:
		if x.BitLen() > 4096 {
			return nil, limitErr("an integer of %d bits (at most 4096)", x.BitLen())
		}
		return &Value{Kind: KindScalar, Scalar: x}, nil
	case nil, bool, int, int64, float64, string:
		return &Value{Kind: KindScalar, Scalar: x}, nil
	case *types.List:
		return listValue(KindList, *x, depth)
	case *types.Tuple:
		return listValue(KindTuple, *x, depth)
	case *types.Dict:
		d := &Value{Kind: KindDict}
		for _, e := range *x {
			if err := d.addEntry(e.Key, e.Value, depth); err != nil {
				return nil, err
			}
		}
		return d, nil
	case *types.OrderedDict:
		d := &Value{Kind: KindDict}
		for el := x.List.Front(); el != nil; el = el.Next() {
			e := el.Value.(*types.OrderedDictEntry)
			if err := d.addEntry(e.Key, e.Value, depth); err != nil {
				return nil, err
			}
		}
		return d, nil
	case *types.GenericObject:
		return nil, fmt.Errorf("%w %s.%s (an object of a class outside the allowlist)", ErrForbiddenGlobal, x.Class.Module, x.Class.Name)
	case *types.GenericClass:
		return nil, fmt.Errorf("%w %s.%s", ErrForbiddenGlobal, x.Module, x.Name)
	case *types.ObjectClass:
		return nil, fmt.Errorf("%w __builtin__.object", ErrForbiddenGlobal)
	case *types.Reconstructor:
		return nil, fmt.Errorf("%w copy_reg._reconstructor", ErrForbiddenGlobal)
	case *types.OrderedDictClass:
		return nil, fmt.Errorf("%w collections.OrderedDict used as a value", ErrForbiddenGlobal)
	case *storage:
		return nil, fmt.Errorf("a bare storage (%s) outside a tensor", x.key)
	}
	return nil, fmt.Errorf("unsupported pickled value of Go type %T", v)
}

func listValue(kind ValueKind, items []interface{}, depth int) (*Value, error) {
	l := &Value{Kind: kind, Items: make([]*Value, 0, len(items))}
	for _, it := range items {
		c, err := toValue(it, depth+1)
		if err != nil {
			return nil, err
		}
		l.Items = append(l.Items, c)
	}
	return l, nil
}

func (d *Value) addEntry(k, v interface{}, depth int) error {
	var key string
	switch x := k.(type) {
	case string:
		key = x
	case nil, bool, int, int64, float64:
		key = fmt.Sprint(x)
	case *big.Int:
		if x.BitLen() > 4096 {
			return limitErr("a dict key integer of %d bits (at most 4096)", x.BitLen())
		}
		key = x.String()
	default:
		return fmt.Errorf("%w: a dict key of Go type %T (want a string or a number)", ErrUnreadable, k)
	}
	c, err := toValue(v, depth+1)
	if err != nil {
		return fmt.Errorf("[%q]: %w", key, err)
	}
	d.Keys = append(d.Keys, key)
	d.Fields = append(d.Fields, c)
	return nil
}
