package runtime

import (
	"strconv"
	"strings"
	"testing"
)

// The fault menu says what the fault it injects does: the factor, the
// length and the count of MenuFault's defaults are the ones its line
// names, so that neither can change alone.
func TestMenuSaysWhatMenuFaultDoes(t *testing.T) {
	tenth := map[float64]string{10: "a tenth"}
	for _, e := range Catalogue {
		f := MenuFault(e.Kind, "join/0", TopicOrders, 0)
		var want []string
		if f.Factor != 0 {
			want = append(want, tenth[f.Factor])
		}
		if f.For != 0 {
			want = append(want, strconv.Itoa(int(f.For.Seconds()))+" s")
		}
		if f.Count != 0 {
			want = append(want, "next "+strconv.Itoa(f.Count))
		}
		for _, w := range want {
			if w == "" || !strings.Contains(e.Menu, w) {
				t.Errorf("%s: the menu says %q, MenuFault gives factor %v, for %s, count %d", e.Kind, e.Menu, f.Factor, f.For, f.Count)
			}
		}
	}
}
