package repl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"unicode"
)

// --json output has to encode every result, including the values a
// debugger exists to find: NaN and ±Inf, which encoding/json refuses
// ("json: unsupported value: NaN"). jsonValue rewrites a result into plain
// values encoding/json always accepts, following its rules for struct
// fields (json tags, omitempty, "-", embedded structs inlined, an outer
// field hiding an embedded one of the same name) with three differences:
//
//   - a non-finite float is the string "NaN", "Inf" or "-Inf";
//   - a nil slice is [] and a nil map {}: a list with nothing in it is
//     empty, not null;
//   - a struct implementing nuller writes the fields it names as null (the
//     statistics of a tensor with no finite element are undefined).
//
// Object keys keep the struct's field order (maps: sorted keys, as
// encoding/json).

// nuller is implemented by results some of whose fields have no value;
// NullFields returns their JSON names (stats.Stats: mean, std, ... when no
// element is finite).
type nuller interface{ NullFields() []string }

var (
	marshalerType = reflect.TypeFor[json.Marshaler]()
	nullerType    = reflect.TypeFor[nuller]()
)

// object is a JSON object whose keys keep their order.
type object struct {
	keys []string
	vals []any
}

func (o *object) set(k string, v any) {
	for i, x := range o.keys {
		if x == k {
			o.vals[i] = v
			return
		}
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

// MarshalJSON writes the keys in order.
func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jsonFloat is f as JSON takes it: the number, or "NaN", "Inf", "-Inf".
func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return f
}

// jsonValue returns v rewritten as described above.
func jsonValue(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if o, ok := asObject(v); ok { // already rewritten
		return o
	}
	if v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface && v.Type().Implements(marshalerType) && v.CanInterface() {
		b, err := v.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return fmt.Sprintf("<%v>", err)
		}
		return json.RawMessage(b)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return jsonValue(v.Elem())
	case reflect.Float32:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return jsonFloat(f)
		}
		return float32(v.Float())
	case reflect.Float64:
		return jsonFloat(v.Float())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // []byte: base64, as encoding/json
			if v.IsNil() {
				return []any{}
			}
			return v.Bytes()
		}
		fallthrough
	case reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = jsonValue(v.Index(i))
		}
		return out
	case reflect.Map:
		keys := v.MapKeys()
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = fmt.Sprint(k.Interface())
		}
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return names[idx[a]] < names[idx[b]] })
		o := &object{}
		for _, i := range idx {
			o.set(names[i], jsonValue(v.MapIndex(keys[i])))
		}
		return o
	case reflect.Struct:
		return structValue(v)
	case reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		return fmt.Sprintf("<%s>", v.Type())
	}
	if v.CanInterface() {
		return v.Interface()
	}
	return nil
}

// field is one JSON field of a struct, found depth levels of embedding
// down.
type field struct {
	name  string
	depth int
	v     reflect.Value
	omit  bool // omitempty
}

func structValue(v reflect.Value) any {
	var fs []field
	collectFields(v, 0, &fs)
	shallowest := map[string]int{}
	for _, f := range fs {
		if d, ok := shallowest[f.name]; !ok || f.depth < d {
			shallowest[f.name] = f.depth
		}
	}
	o := &object{}
	done := map[string]bool{}
	for _, f := range fs {
		if f.depth != shallowest[f.name] || done[f.name] {
			continue
		}
		done[f.name] = true
		if f.omit && isEmpty(f.v) {
			continue
		}
		o.set(f.name, jsonValue(f.v))
	}
	if v.Type().Implements(nullerType) && v.CanInterface() {
		for _, k := range v.Interface().(nuller).NullFields() {
			if done[k] {
				o.set(k, nil)
			}
		}
	}
	return o
}

// collectFields lists v's JSON fields in order, inlining embedded structs
// that have no JSON name of their own.
func collectFields(v reflect.Value, depth int, out *[]field) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(fv, depth+1, out)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = snakeCase(sf.Name)
		}
		*out = append(*out, field{name: name, depth: depth, v: fv, omit: strings.Contains(","+opts+",", ",omitempty,")})
	}
}

// isEmpty is encoding/json's omitempty test.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

func asObject(v reflect.Value) (*object, bool) {
	if v.Kind() != reflect.Pointer || !v.CanInterface() {
		return nil, false
	}
	o, ok := v.Interface().(*object)
	return o, ok
}

// marshalResult encodes v for --json output (see jsonValue).
func marshalResult(v any) ([]byte, error) {
	return json.Marshal(jsonValue(reflect.ValueOf(v)))
}

// snakeCase is the JSON name of a struct field without a json tag:
// "MaxRelDiff" → "max_rel_diff", "SHA256" → "sha256", "HFIndex" →
// "hf_index" (a run of capitals is one word; its last capital starts the
// next word when a lower-case letter follows). Every result key is snake_case,
// as the tagged ones are, whoever forgot a tag.
func snakeCase(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		up := unicode.IsUpper(c)
		if up && i > 0 {
			prev := r[i-1]
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) && !unicode.IsUpper(r[max(i-2, 0)]) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
