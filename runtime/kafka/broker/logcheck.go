package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// LogNeeds is what a state dir needs the embedded broker's log to hold: the
// offsets its checkpoints, its verification ledger and the record of its
// input point into. The broker's log is checked against them before the
// broker reads it (see checkLog).
type LogNeeds struct {
	// Checkpoints says which checkpoints the state dir holds, for messages
	// ("checkpoints (newest 7)"); "" when it holds none. Checkpoints were
	// taken on a log: without one they cannot be restored.
	Checkpoints string
	// Within are offsets the log must hold, from its start to its end: the
	// checkpoints' source offsets and where their sinks' transactions
	// began, the ledger's positions.
	Within []LogNeed
	// Reach are offsets the log must reach (its end at or after them), not
	// minding where it starts: the end of an input written whole.
	Reach []LogNeed
	// Ledger is the verification ledger's file when the runs on the state
	// dir need it: a partition of Within or Reach that starts above offset
	// 0 had records deleted, which only the ledger accounts for.
	Ledger string
}

// LogNeed is one offset of a partition that a state dir needs, and why.
type LogNeed struct {
	Topic     string
	Partition int32
	Offset    int64
	Why       string // e.g. "checkpoint 7's source offset"
}

// logDamage is a file or part of the broker's log that is damaged, and how.
type logDamage struct{ where, what string }

func (d *logDamage) Error() string { return d.where + ": " + d.what }

func damaged(where, format string, args ...any) error {
	return &logDamage{where: where, what: fmt.Sprintf(format, args...)}
}

// partitionLog is what a partition's log holds: the offsets of its first
// record and of the one after its last (both 0 when it holds none).
type partitionLog struct {
	dir        string
	start, end int64
}

type topicPartition struct {
	topic string
	part  int32
}

// checkLog checks the broker's log in dir before the broker reads it (kfake
// reads a damaged log without a word: it cuts a segment at its first bad
// batch and starts without topics it does not know): its topics against
// the partition folders on disk, every segment's record batches, and what
// the state dir needs of it. A damaged log is a *logDamage error; a new or
// empty log is fine unless the state dir needs one.
func checkLog(dir string, needs LogNeeds) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("the embedded Kafka broker's log %s: %w", dir, err)
	}
	if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return !strings.HasSuffix(e.Name(), ".tmp") }) {
		if needs.Checkpoints != "" {
			return damaged(dir, "the log is missing, and the state dir holds %s taken on it", needs.Checkpoints)
		}
		return nil // a new log
	}
	if err := checkMeta(dir); err != nil {
		return err
	}
	topics, err := readTopics(dir)
	if err != nil {
		return err
	}
	parts, err := scanPartitions(dir, topics)
	if err != nil {
		return err
	}
	return judgeNeeds(dir, parts, needs, fileExists(needs.Ledger))
}

func fileExists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

// checkMeta refuses a log without the meta.json that the broker reads
// first: without it the broker would start empty beside the old data.
func checkMeta(dir string) error {
	path := filepath.Join(dir, "meta.json")
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return damaged(dir, "it has no meta.json, so its topics, offsets and transactions cannot be read back")
	case err != nil:
		return damaged(path, "%v", err)
	case fi.Size() == 0:
		return damaged(dir, "it has an empty meta.json, so its topics, offsets and transactions cannot be read back")
	}
	return nil
}

// logTopic is a topic as the broker's topics.json lists it.
type logTopic struct {
	Name       string            `json:"name"`
	Partitions int               `json:"partitions"`
	Configs    map[string]string `json:"configs,omitempty"`
}

// compacted says whether compaction may leave gaps between its offsets.
func (t logTopic) compacted() bool {
	return strings.Contains(t.Configs["cleanup.policy"], "compact")
}

// readTopics reads the topics the broker knew from topics.json; none when
// there is no such file (a broker killed before it wrote it first).
func readTopics(dir string) (map[string]logTopic, error) {
	path := filepath.Join(dir, "topics.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the embedded Kafka broker's log: %w", err)
	}
	var file struct {
		Topics []logTopic `json:"topics"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, damaged(path, "it cannot be read (%v)", err)
	}
	topics := map[string]logTopic{}
	for _, t := range file.Topics {
		topics[t.Name] = t
	}
	return topics, nil
}

// scanPartitions checks every partition folder of the log against the
// topics the broker knew, and scans its segments.
func scanPartitions(dir string, topics map[string]logTopic) (map[topicPartition]partitionLog, error) {
	root := filepath.Join(dir, "partitions")
	entries, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the embedded Kafka broker's log: %w", err)
	}
	parts := map[topicPartition]partitionLog{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		pdir := filepath.Join(root, e.Name())
		tp, ok := parsePartitionDir(e.Name())
		t, known := topics[tp.topic]
		switch {
		case !ok:
			return nil, damaged(pdir, "the broker keeps no partition in a folder of this name")
		case topics == nil:
			return nil, damaged(filepath.Join(dir, "topics.json"), "it is missing, and the log holds partitions (%s among them): without it the broker starts without their topics", e.Name())
		case !known:
			return nil, damaged(pdir, "topics.json does not list topic %s, whose partition this is", tp.topic)
		case tp.part >= int32(t.Partitions):
			return nil, damaged(pdir, "topics.json gives topic %s %d partitions, and this is partition %d", tp.topic, t.Partitions, tp.part)
		}
		pl, err := scanPartition(pdir, t.compacted())
		if err != nil {
			return nil, err
		}
		parts[tp] = pl
	}
	return parts, nil
}

// partitionDir is where the broker keeps a partition's log (kfake's
// partDir).
func partitionDir(dir, topic string, p int32) string {
	return filepath.Join(dir, "partitions", url.PathEscape(topic)+"-"+strconv.Itoa(int(p)))
}

func parsePartitionDir(name string) (topicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return topicPartition{}, false
	}
	topic, err := url.PathUnescape(name[:i])
	p, perr := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || perr != nil || p < 0 {
		return topicPartition{}, false
	}
	return topicPartition{topic, int32(p)}, true
}

// judgeNeeds checks that the log holds what the state dir needs of it.
func judgeNeeds(dir string, parts map[topicPartition]partitionLog, needs LogNeeds, ledger bool) error {
	log := func(n LogNeed) partitionLog {
		if pl, ok := parts[topicPartition{n.Topic, n.Partition}]; ok {
			return pl
		}
		return partitionLog{dir: partitionDir(dir, n.Topic, n.Partition)}
	}
	for _, n := range needs.Within {
		pl := log(n)
		switch {
		case n.Offset > pl.end:
			return damaged(pl.dir, "the log of %s/%d ends at offset %d, and %s is %d: the records after its end are gone", n.Topic, n.Partition, pl.end, n.Why, n.Offset)
		case n.Offset < pl.start:
			return damaged(pl.dir, "the log of %s/%d starts at offset %d, and %s is %d: the records before its start are gone", n.Topic, n.Partition, pl.start, n.Why, n.Offset)
		}
	}
	for _, n := range needs.Reach {
		if pl := log(n); n.Offset > pl.end {
			return damaged(pl.dir, "the log of %s/%d ends at offset %d, and %s ends at offset %d: the records after its end are gone", n.Topic, n.Partition, pl.end, n.Why, n.Offset)
		}
	}
	if needs.Ledger == "" || ledger {
		return nil
	}
	for _, n := range append(slices.Clip(needs.Within), needs.Reach...) {
		if pl := log(n); pl.start > 0 {
			return damaged(pl.dir, "the log of %s/%d starts at offset %d: the records before it are gone, and the verification ledger %s, which accounts for the records retention deletes, is missing", n.Topic, n.Partition, pl.start, needs.Ledger)
		}
	}
	return nil
}
