package view

import "testing"

// FieldOf reads an event's fields by their JSON names, typed, those of
// embedded structs too, and says when there is none.
func TestFieldOfReadsTypedFields(t *testing.T) {
	e := FaultInjected{Fault: "panic", Task: "join/1"}
	if v, ok := FieldOf(e, "task"); !ok || v != "join/1" {
		t.Errorf("task = %v %v", v, ok)
	}
	if _, ok := FieldOf(e, "nope"); ok {
		t.Error("a field that is not there was found")
	}
	c := CheckpointCompleted{ID: 7}
	if v, ok := FieldOf(c, "id"); !ok || v != int64(7) {
		t.Errorf("id = %#v %v", v, ok)
	}
	for _, name := range EventNames() {
		fields, _ := EventFields(name)
		ev, err := Decode(name, []byte("{}"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fields {
			if _, ok := FieldOf(ev, f); !ok {
				t.Errorf("%s: EventFields lists %s, FieldOf does not find it", name, f)
			}
		}
	}
}
