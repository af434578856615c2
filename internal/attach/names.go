package attach

import (
	"regexp"
	"strconv"
	"strings"
)

// OperatorName is the short name the screen gives a Flink job vertex,
// whose name lists its chained operators: "Source: orders-source ->
// parse-orders" is orders-source→parse-orders, "sink: Writer -> sink:
// Committer" is sink, "join" is join. Flink's own words for the parts of
// a source or a sink are left out; an operator named twice in a row is
// named once.
func OperatorName(vertex string) string {
	var parts []string
	for _, p := range strings.Split(vertex, " -> ") {
		p = strings.TrimSpace(p)
		for _, prefix := range []string{"Source: ", "Sink: "} {
			p = strings.TrimPrefix(p, prefix)
		}
		for _, suffix := range []string{": Writer", ": Committer", ": Global Committer", ": Pre-Commit Topology", ": Post-Commit Topology"} {
			p = strings.TrimSuffix(p, suffix)
		}
		if p != "" && (len(parts) == 0 || parts[len(parts)-1] != p) {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return vertex
	}
	return strings.Join(parts, "→")
}

// chained are the operators of a vertex the screen names name: the
// control topic's faults name one of them.
func chained(name string) []string { return strings.Split(name, "→") }

// flinkTask reads a subtask as Flink names it in an exception: "join
// (1/2) - execution #0" or "join (1/2)#0" is index 0 of the vertex join.
var flinkTask = regexp.MustCompile(`^(.*) \((\d+)/\d+\)(?:#\d+| - execution #\d+)?$`)

// taskOf is the screen's name of the subtask Flink names task ("join/0"),
// with the vertex names by Flink's name; task itself when it names none.
func taskOf(task string, names map[string]string) string {
	m := flinkTask.FindStringSubmatch(task)
	if m == nil {
		return task
	}
	n, _ := strconv.Atoi(m[2])
	name, ok := names[m[1]]
	if !ok {
		name = OperatorName(m[1])
	}
	return name + "/" + strconv.Itoa(n-1)
}

// shipKinds are the screen's names of Flink's ship strategies.
var shipKinds = map[string]string{"FORWARD": "forward", "HASH": "hash", "REBALANCE": "rebalance",
	"BROADCAST": "broadcast", "RESCALE": "rescale", "GLOBAL": "global"}

func shipKind(s string) string {
	if k, ok := shipKinds[s]; ok {
		return k
	}
	return strings.ToLower(s)
}
