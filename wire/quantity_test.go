package wire

import (
	"reflect"
	"testing"
)

func TestDecodeAlarmsQuantity(t *testing.T) {
	got, err := DecodeAlarmsQuantity([]byte(`{"alarmsQuantity":{"D1":5,"D2":"3","D3":null,"D4":true,"D5":-1,"D6":1.5}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"D1": 5, "D2": 3, "D3": 0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if bare, err := DecodeAlarmsQuantity([]byte(`{"D1":2}`)); err != nil || bare["D1"] != 2 {
		t.Fatalf("bare map: %v %v", bare, err)
	}
	for _, bad := range []string{`[]`, `"x"`, `<html>`, ``} {
		if _, err := DecodeAlarmsQuantity([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
