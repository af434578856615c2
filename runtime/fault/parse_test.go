package fault

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseReadsEveryKey(t *testing.T) {
	cases := []struct {
		spec string
		want Fault
	}{
		{"after=3s,task=join/1,fault=panic", Fault{Kind: Panic, Task: "join/1", After: 3 * time.Second}},
		{"after-records=20000, task=join/1 ,fault=error", Fault{Kind: Error, Task: "join/1", AfterRecords: 20000}},
		{"after=3s,after-checkpoints=2,task=join/0,fault=panic", Fault{Kind: Panic, Task: "join/0", After: 3 * time.Second, AfterCheckpoints: 2}},
		{"task=join/0,fault=slow", Fault{Kind: Slow, Task: "join/0", Factor: 10, For: 5 * time.Second}},
		{"task=join/0,fault=slow,factor=200,for=1500ms", Fault{Kind: Slow, Task: "join/0", Factor: 200, For: 1500 * time.Millisecond}},
		{"fault=storage-fail", Fault{Kind: StorageFail, Count: 1}},
		{"after=400ms,fault=storage-fail,count=30", Fault{Kind: StorageFail, Count: 30, After: 400 * time.Millisecond}},
		{"fault=broker-down", Fault{Kind: BrokerDown, For: 5 * time.Second}},
		{"fault=poison,topic=payments,partition=2", Fault{Kind: Poison, Topic: "payments", Partition: 2}},
		{"fault=poison", Fault{Kind: Poison}}, // the job names the topic
	}
	for _, tc := range cases {
		got, err := Parse(tc.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.spec, err)
		}
		tc.want.Spec = tc.spec
		if got != tc.want {
			t.Fatalf("Parse(%q) = %+v, want %+v", tc.spec, got, tc.want)
		}
	}
}

func TestParseSaysWhatIsWrong(t *testing.T) {
	cases := []struct{ spec, want string }{
		{"task=join/1,fault=meteor", `unknown fault "meteor" (known: broker-down, corrupt-checkpoint, crash, error, panic, poison, savepoint, slow, storage-fail)`},
		{"task=join/1", "fault= is missing"},
		{"fault=panic", "task= is missing (e.g. task=join/1)"},
		{"task=join/1,fault", `"fault" is not key=value`},
		{"task=join/1,task=join/0,fault=panic", "task given twice"},
		{"task=join/1,fault=panic,colour=red", `unknown key "colour"`},
		{"after=soon,task=join/1,fault=panic", "after=soon is not a duration like 3s or 500ms"},
		{"after-records=-1,task=join/1,fault=panic", "after-records=-1 is not a whole number"},
		{"after-checkpoints=0,task=join/1,fault=panic", "after-checkpoints=0 is not a whole number of 1 or more"},
		{"after=1s,after-records=5,task=join/1,fault=panic", "after-records= goes with neither after= nor after-checkpoints="},
		{"task=join/1,fault=panic,count=2", "count= goes with fault=storage-fail"},
		{"fault=storage-fail,count=0", "count=0 is not a whole number of 1 or more"},
		{"task=join/1,fault=slow,factor=0.5", "factor=0.5 is not a number from 1 to 1000"},
		{"task=join/1,fault=panic,factor=2", "factor= goes with fault=slow"},
		{"task=join/1,fault=slow,for=0s", "for=0s is not a duration like 3s"},
		{"task=join/1,fault=panic,for=1s", "for= goes with fault=slow or fault=broker-down"},
		{"fault=savepoint,topic=orders", "topic= and partition= go with fault=poison"},
		{"fault=poison,partition=-1", "partition=-1 is not a whole number"},
		{"task=join/1,fault=crash", "fault=crash acts on the whole job; leave out task="},
		{"after-records=5,fault=savepoint", "fault=savepoint takes after=, not after-records="},
	}
	for _, tc := range cases {
		_, err := Parse(tc.spec)
		var se *SpecError
		if !errors.As(err, &se) {
			t.Fatalf("Parse(%q) = %v, want a *SpecError", tc.spec, err)
		}
		if se.Spec != tc.spec || !strings.Contains(se.Want, tc.want) {
			t.Fatalf("Parse(%q): %q, want it to say %q", tc.spec, err, tc.want)
		}
		if !strings.HasPrefix(err.Error(), `"`+tc.spec+`": `) {
			t.Fatalf("Parse(%q): %q does not begin with the spec", tc.spec, err)
		}
	}
}

func TestMenuFaultsAreInTheCatalogue(t *testing.T) {
	for _, e := range Catalogue {
		f := Menu(e.Kind, "join/0", "orders", 1)
		if !Known(f.Kind) || (f.Kind.JobLevel() && f.Task != "") || (!f.Kind.JobLevel() && f.Task != "join/0") {
			t.Fatalf("Menu(%s) = %+v", e.Kind, f)
		}
	}
}
