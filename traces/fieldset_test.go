package traces

import (
	"reflect"
	"testing"
)

// TestFieldSetsMatchIsZero holds argsSet and resultSet to the field tables: with any one Go field
// made non-zero, the mask has exactly the bits of the table's fields whose isZero says false.
func TestFieldSetsMatchIsZero(t *testing.T) {
	checkFieldSet(t, argFields, argsSet)
	checkFieldSet(t, resultFields, resultSet)
}

func checkFieldSet[T any](t *testing.T, fields []field[T], set func(*T) uint64) {
	t.Helper()
	var zero T
	if m := set(&zero); m != 0 {
		t.Errorf("%T: zero value has mask %#x", zero, m)
	}
	typ := reflect.TypeFor[T]()
	if typ.NumField() != len(fields) {
		t.Errorf("%v has %d fields, the table %d", typ, typ.NumField(), len(fields))
	}
	for i := range typ.NumField() {
		var v T
		f := reflect.ValueOf(&v).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x")
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		default:
			t.Fatalf("%v.%s: kind %v not handled", typ, typ.Field(i).Name, f.Kind())
		}
		var want uint64
		for j := range fields {
			if !fields[j].isZero(&v) {
				want |= 1 << j
			}
		}
		if got := set(&v); got != want || want == 0 {
			t.Errorf("%v.%s set: mask %#x, the table says %#x", typ, typ.Field(i).Name, got, want)
		}
	}
}
