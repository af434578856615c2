package orders

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/runtime"
)

// fillFields sets every field of the struct v points at, those of embedded
// structs too, to a value that is not zero and differs from the others.
func fillFields(t *testing.T, v reflect.Value, n *int) {
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		*n++
		switch f.Kind() {
		case reflect.String:
			f.SetString(strings.Repeat("x", *n))
		case reflect.Int64:
			f.SetInt(int64(*n) * -1e12)
		case reflect.Struct:
			fillFields(t, f, n)
		default:
			t.Fatalf("%s.%s is a %s: teach the channel-state codec and this test about it", v.Type(), v.Type().Field(i).Name, f.Kind())
		}
	}
}

// Every field of every value the job's operators emit survives channel
// state, those a later change adds too (the test fills them by
// reflection); InFlightSize is what AppendInFlight appends, and costs no
// allocation on the hot path.
func TestInFlightKeepsEveryField(t *testing.T) {
	values := []runtime.InFlightValue{&Order{}, &Payment{}, &PaidOrder{}, &Revenue{}, &Enriched{},
		&Revenue{PaidOrder: PaidOrder{OrderID: "ö-ü/\x00 ", AmountCents: math.MinInt64}, CustomerTotalCents: math.MaxInt64}}
	tags := map[byte]bool{}
	for i, v := range values {
		if i < 5 {
			n := 0
			fillFields(t, reflect.ValueOf(v).Elem(), &n)
			if tags[v.InFlightTag()] {
				t.Errorf("%T shares tag %d", v, v.InFlightTag())
			}
			tags[v.InFlightTag()] = true
		}
		b := v.AppendInFlight([]byte("x"))[1:]
		if len(b) != v.InFlightSize() {
			t.Errorf("%T: InFlightSize %d, appended %d", v, v.InFlightSize(), len(b))
		}
		if a := testing.AllocsPerRun(10, func() { v.InFlightSize() }); a != 0 {
			t.Errorf("%T: InFlightSize allocates %v times", v, a)
		}
		r := runtime.NewInFlightReader(b)
		got, ok := (Types{}).NewInFlightDecoder().Decode(v.InFlightTag(), r, 1)
		if !ok || r.Err() != nil || r.Len() != 0 || !reflect.DeepEqual(got, v) {
			t.Errorf("%T: decoded %+v (ok %v, %v, %d bytes left), want %+v", v, got, ok, r.Err(), r.Len(), v)
		}
	}
	if _, ok := (Types{}).NewInFlightDecoder().Decode(tagEnriched+1, runtime.NewInFlightReader(nil), 1); ok {
		t.Error("a tag the job has no type of decoded")
	}
	r := runtime.NewInFlightReader((&Order{OrderID: "o-1"}).AppendInFlight(nil)[:3])
	if (Types{}).NewInFlightDecoder().Decode(tagOrder, r, 1); r.Err() == nil {
		t.Error("a truncated order decoded without an error")
	}
}
