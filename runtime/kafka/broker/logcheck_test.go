package broker_test

import (
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/faultline-dev/faultline/runtime/jobs/orders"
	"github.com/faultline-dev/faultline/runtime/kafka"
	"github.com/faultline-dev/faultline/runtime/kafka/broker"
	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// logCase is a kind of damage, or of what a killed process leaves, done to
// a copy of a real log, and what checkLog must say of it: want "" for
// nothing, else words of its message and the file it names (where, a
// suffix of the path).
type logCase struct {
	name  string
	do    func(t *testing.T, dir string)
	needs func(dir string) broker.LogNeeds
	where string
	want  string
}

// The check passes a log as a process killed at any moment leaves it, and
// refuses every kind of damage with the file or part it found it in.
func TestLogCheckFindsDamageAndPassesWhatAKillLeaves(t *testing.T) {
	log := writeBrokerLog(t)
	end := func(part string) int64 { return log.ends[part] }
	o0 := "orders-0"
	if n := len(segments(t, log.dir, o0)); n < 4 {
		t.Fatalf("orders-0 has %d segments, want 4 or more", n)
	}
	checkpointAt := func(part string, off int64) func(string) broker.LogNeeds {
		topic, p, _ := strings.Cut(part, "-")
		n, _ := strconv.Atoi(p)
		return func(dir string) broker.LogNeeds {
			return broker.LogNeeds{Checkpoints: "checkpoints (newest 3)", Within: []broker.LogNeed{{Topic: topic, Partition: int32(n), Offset: off, Why: "checkpoint 3's source offset"}},
				Ledger: filepath.Join(filepath.Dir(dir), "verify", "ledger")}
		}
	}
	var cases []logCase
	cases = append(cases, killCases(t, log)...)
	cases = append(cases, segmentCases(t, log)...)
	cases = append(cases, indexCases(t, log)...)
	cases = append(cases,
		logCase{name: "topics.json missing", do: func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, "topics.json"))) },
			where: "topics.json", want: "it is missing, and the log holds partitions"},
		logCase{name: "topics.json without a topic", do: func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, "topics.json"))
			must(t, err)
			must(t, os.WriteFile(filepath.Join(dir, "topics.json"), []byte(strings.Replace(string(b), `"payments"`, `"pay"`, 1)), 0o644))
		}, where: "payments-0", want: "topics.json does not list topic payments"},
		logCase{name: "the whole log missing, checkpoints present", do: func(t *testing.T, dir string) { must(t, os.RemoveAll(dir)) },
			needs: checkpointAt(o0, 10), where: "kafka", want: "the log is missing, and the state dir holds checkpoints (newest 3) taken on it"},
		logCase{name: "the whole log missing, nothing needed", do: func(t *testing.T, dir string) { must(t, os.RemoveAll(dir)) }},
		logCase{name: "a checkpoint past the end", needs: checkpointAt("orders-2", end("orders-2")+1),
			where: "orders-2", want: "ends at offset 200, and checkpoint 3's source offset is 201"},
		logCase{name: "a checkpoint at the end", needs: checkpointAt("revenue-0", end("revenue-0"))},
		logCase{name: "the input not all there", needs: func(string) broker.LogNeeds {
			return broker.LogNeeds{Reach: []broker.LogNeed{{Topic: "payments", Partition: 3, Offset: 250, Why: "the input written whole (input.json)"}}}
		}, where: "payments-3", want: "ends at offset 200, and the input written whole (input.json) ends at offset 250"},
		logCase{name: "a trimmed log without its ledger", do: func(t *testing.T, dir string) {
			removeSegment(t, dir, o0, 0, "dat", "idx")
		}, needs: checkpointAt(o0, end(o0)), where: o0, want: "verify/ledger, which accounts for the records retention deletes, is missing"},
		logCase{name: "a trimmed log before the ledger's position", do: func(t *testing.T, dir string) {
			removeSegment(t, dir, o0, 0, "dat", "idx")
		}, needs: func(string) broker.LogNeeds {
			return broker.LogNeeds{Within: []broker.LogNeed{{Topic: "orders", Partition: 0, Offset: 10, Why: "the verification ledger's position"}}}
		}, where: o0, want: "and the verification ledger's position is 10: the records before its start are gone"},
	)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, log) })
	}
}

// run does the case to a copy of the log, in a state dir's kafka folder,
// and starts the broker on it. Damage must be refused with one line that
// names the file or part and the way on. A log the check passes must be
// one the broker reads and keeps as a killed process may leave it: the
// broker writes to it, is killed (its folder copied as it runs) between a
// batch and its index entry, and the check passes that too.
func (tc logCase) run(t *testing.T, log brokerLog) {
	dir := filepath.Join(t.TempDir(), "kafka")
	copyTree(t, log.dir, dir)
	if tc.do != nil {
		tc.do(t, dir)
	}
	var needs broker.LogNeeds
	if tc.needs != nil {
		needs = tc.needs(dir)
	}
	e, err := broker.StartEmbedded(0, dir, kafkatest.Topics("revenue", 1), broker.WithLogNeeds(needs))
	if tc.want != "" {
		if err == nil {
			e.Close()
		}
		if msg := fmt.Sprint(err); !errors.Is(err, broker.ErrLogDamaged) || !strings.Contains(msg, tc.where+": ") || !strings.Contains(msg, tc.want) ||
			strings.Contains(msg, "\n") {
			t.Fatalf("started: %v\nwant one line: damage in …%s: …%s…", err, tc.where, tc.want)
		}
		return
	}
	if err != nil {
		t.Fatalf("started: %v, want no damage", err)
	}
	defer e.Close()
	p, err := kafka.Client{Brokers: []string{e.Addr}}.SyncProducer()
	must(t, err)
	for i := range 10 {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: orders.TopicOrders, Partition: 0, Value: sarama.StringEncoder(fmt.Sprint("after-", i))})
		must(t, err)
	}
	p.Close()
	killed := filepath.Join(t.TempDir(), "kafka")
	copyTree(t, dir, killed)
	noSnapshots(t, killed)
	truncate(t, segPath(t, killed, "orders-0", -1, "idx"), kfakeIndexEntry)
	if err := broker.CheckLog(killed, broker.LogNeeds{}); err != nil {
		t.Fatalf("killed between a batch and its index entry after the broker read the log: %v", err)
	}
	e.Close()
	if err := broker.CheckLog(dir, broker.LogNeeds{}); err != nil {
		t.Fatalf("after the broker read the log and stopped: %v", err)
	}
}

// killCases leave the log as a process killed at some moment leaves it:
// the check passes them all.
func killCases(t *testing.T, log brokerLog) []logCase {
	o0 := "orders-0"
	lastBatch := func(t *testing.T, dir, part string) (path string, cut int64) {
		path = segPath(t, dir, part, -1, "dat")
		starts := batchStarts(t, path)
		fi, err := os.Stat(path)
		must(t, err)
		return path, fi.Size() - starts[len(starts)-1]
	}
	return []logCase{
		{name: "clean"},
		{name: "killed in the middle of writing a batch", do: func(t *testing.T, dir string) {
			noSnapshots(t, dir)
			path, size := lastBatch(t, dir, "revenue-0")
			truncate(t, path, size/2)
			truncate(t, segPath(t, dir, "revenue-0", -1, "idx"), kfakeIndexEntry)
		}},
		{name: "killed with 5 bytes of a batch written", do: func(t *testing.T, dir string) {
			noSnapshots(t, dir)
			path, size := lastBatch(t, dir, o0)
			truncate(t, path, size-5)
			truncate(t, segPath(t, dir, o0, -1, "idx"), kfakeIndexEntry)
		}},
		{name: "killed between a batch and its index entry", do: func(t *testing.T, dir string) {
			noSnapshots(t, dir)
			truncate(t, segPath(t, dir, o0, -1, "idx"), kfakeIndexEntry)
		}},
		{name: "killed while writing an index entry", do: func(t *testing.T, dir string) {
			noSnapshots(t, dir)
			truncate(t, segPath(t, dir, o0, -1, "idx"), 8)
		}},
		// A segment rolls when the one before is full: the last segment
		// but one is, and its successor is made empty.
		{name: "killed after rolling to a new segment", do: func(t *testing.T, dir string) {
			noSnapshots(t, dir)
			path := segPath(t, dir, o0, -1, "dat")
			removeSegment(t, dir, o0, -1, "dat", "idx")
			must(t, os.WriteFile(path, nil, 0o644))
		}},
		{name: "killed after rolling to a new segment and its index", do: func(t *testing.T, dir string) {
			noSnapshots(t, dir)
			path := segPath(t, dir, o0, -1, "dat")
			removeSegment(t, dir, o0, -1, "dat", "idx")
			must(t, os.WriteFile(path, nil, 0o644))
			must(t, os.WriteFile(strings.TrimSuffix(path, "dat")+"idx", nil, 0o644))
		}},
		{name: "killed while deleting the first segment", do: func(t *testing.T, dir string) {
			removeSegment(t, dir, o0, 0, "dat")
		}},
	}
}

// segmentCases damage segment files.
func segmentCases(t *testing.T, log brokerLog) []logCase {
	o0 := "orders-0"
	bases := segments(t, log.dir, o0)
	name := func(i int, ext string) string {
		if i < 0 {
			i += len(bases)
		}
		return fmt.Sprint(bases[i], ".", ext)
	}
	cutBatch := func(i int, half bool) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			path := segPath(t, dir, o0, i, "dat")
			starts := batchStarts(t, path)
			fi, err := os.Stat(path)
			must(t, err)
			by := fi.Size() - starts[len(starts)-1]
			if half {
				by /= 2
			}
			truncate(t, path, by)
		}
	}
	remove := func(i int, exts ...string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			removeSegment(t, dir, o0, i, exts...)
		}
	}
	return []logCase{
		{name: "a segment cut in the middle of a batch", do: cutBatch(1, true), where: name(1, "dat"), want: "a record batch cut off, and segments follow it"},
		{name: "the last segment cut in the middle of a batch", do: cutBatch(-1, true), where: name(-1, "dat"), want: "a record batch cut off, which its index lists"},
		{name: "the last segment cut at a batch boundary", do: cutBatch(-1, false), where: name(-1, "dat"), want: "whole ones: it was cut short"},
		{name: "a segment cut at a batch boundary", do: cutBatch(1, false), where: name(1, "dat"), want: "whole ones: it was cut short"},
		{name: "a byte flipped inside a record", do: func(t *testing.T, dir string) {
			path := segPath(t, dir, o0, 2, "dat")
			flipByte(t, path, batchStarts(t, path)[1]+500)
		}, where: name(2, "dat"), want: "fails its CRC-32C"},
		{name: "a byte flipped in a batch's offset", do: func(t *testing.T, dir string) {
			path := segPath(t, dir, o0, 2, "dat")
			flipByte(t, path, batchStarts(t, path)[1]+7)
		}, where: name(2, "dat"), want: "should follow"},
		// The leader epoch (bytes 12–15 of a batch) is outside the batch's
		// CRC: its intact index entry tells the change, in the segment.
		{name: "a byte flipped in a batch's leader epoch", do: func(t *testing.T, dir string) {
			path := segPath(t, dir, o0, 2, "dat")
			flipByte(t, path, batchStarts(t, path)[1]+14)
		}, where: name(2, "dat"), want: "says leader epoch"},
		{name: "the first segment deleted, a checkpoint in it", do: remove(0, "dat", "idx"), needs: func(string) broker.LogNeeds {
			return broker.LogNeeds{Within: []broker.LogNeed{{Topic: "orders", Partition: 0, Offset: 5, Why: "checkpoint 3's source offset"}}}
		}, where: o0, want: fmt.Sprintf("starts at offset %d, and checkpoint 3's source offset is 5", bases[1])},
		{name: "a middle segment deleted", do: remove(1, "dat", "idx"), where: name(2, "dat"),
			want: fmt.Sprintf("the records from %d to %d are gone", bases[1], bases[2]-1)},
		{name: "only the .dat of a middle segment deleted", do: remove(1, "dat"), where: name(1, "dat"), want: "it is missing, and its index"},
		{name: "the last segment deleted", do: remove(-1, "dat", "idx"), where: name(-1, "dat"), want: "it is missing, and snapshot.json"},
		{name: "the last segment deleted, no snapshot", do: func(t *testing.T, dir string) {
			noSnapshots(t, dir)
			remove(-1, "dat", "idx")(t, dir)
		}, needs: func(string) broker.LogNeeds {
			return broker.LogNeeds{Within: []broker.LogNeed{{Topic: "orders", Partition: 0, Offset: log.ends[o0], Why: "checkpoint 3's source offset"}}}
		}, where: o0, want: fmt.Sprintf("ends at offset %d, and checkpoint 3's source offset is %d", bases[len(bases)-1], log.ends[o0])},
		{name: "the first segment renamed", do: func(t *testing.T, dir string) {
			dat, idx := segPath(t, dir, "orders-1", 0, "dat"), segPath(t, dir, "orders-1", 0, "idx")
			must(t, os.Rename(dat, filepath.Join(dir, "partitions", "orders-1", "5.dat")))
			must(t, os.Rename(idx, filepath.Join(dir, "partitions", "orders-1", "5.idx")))
		}, where: "orders-1/5.dat", want: "its name says it starts at offset 5, and its first record batch says offset 0"},
	}
}

// indexCases damage index files.
func indexCases(t *testing.T, log brokerLog) []logCase {
	o0 := "orders-0"
	bases := segments(t, log.dir, o0)
	return []logCase{
		{name: "an index deleted", do: func(t *testing.T, dir string) { must(t, os.Remove(segPath(t, dir, o0, 1, "idx"))) },
			where: fmt.Sprint(bases[1], ".idx"), want: "it is missing, and its segment"},
		{name: "an index damaged", do: func(t *testing.T, dir string) { flipByte(t, segPath(t, dir, o0, 1, "idx"), kfakeIndexEntry+3) },
			where: fmt.Sprint(bases[1], ".idx"), want: "entry 1 (of the record batch at offset"},
		{name: "an index cut short", do: func(t *testing.T, dir string) { truncate(t, segPath(t, dir, o0, 1, "idx"), kfakeIndexEntry) },
			where: fmt.Sprint(bases[1], ".idx"), want: "record batches (and 0 bytes more), and its segment"},
		{name: "the last index cut short by two entries", do: func(t *testing.T, dir string) {
			noSnapshots(t, dir)
			truncate(t, segPath(t, dir, o0, -1, "idx"), 2*kfakeIndexEntry)
		}, where: fmt.Sprint(bases[len(bases)-1], ".idx"), want: "record batches (and 0 bytes more), and its segment"},
		{name: "a transaction's index entry says it is none", do: func(t *testing.T, dir string) {
			path := segPath(t, dir, "revenue-0", 0, "idx")
			b, err := os.ReadFile(path)
			must(t, err)
			b[14] = 0
			b[1] = byte(crc32.Checksum(b[2:kfakeIndexEntry], crc32.MakeTable(crc32.Castagnoli)))
			must(t, os.WriteFile(path, b, 0o644))
		}, where: "revenue-0/0.idx", want: "says the batch is in a transaction: false"},
	}
}
