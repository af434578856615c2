package kfake

import (
	"encoding/base64"
	"hash/crc32"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	noID   uuid
	crc32c = crc32.MakeTable(crc32.Castagnoli)
)

type (
	uuid [16]byte

	data struct {
		c   *Cluster
		tps tps[partData]

		id2t      map[uuid]string               // topic IDs => topic name
		t2id      map[string]uuid               // topic name => topic IDs
		treplicas map[string]int                // topic name => # replicas
		tcfgs     map[string]map[string]*string // topic name => config name => config value
		tnorms    map[string]string             // normalized name (. replaced with _) => topic name
	}

	abortedTxnEntry struct {
		producerID  int64
		firstOffset int64 // first data offset of this txn on this partition
		lastOffset  int64 // offset of the abort control record
	}

	// segmentInfo tracks per-segment metadata. Designed for future
	// LRU eviction of per-segment indexes (seg.index = nil to evict,
	// rebuild by reading segment file).
	//
	// File handle strategy: readFile is a lazily-opened read handle
	// for sealed (non-active) segments. The active segment uses
	// pd.activeSegFile for both writes and reads. All I/O runs in
	// the single Cluster.run() goroutine so no locking is needed.
	// readFile is closed on segment trim (trimLeft) and topic delete.
	segmentInfo struct {
		base     int64       // base offset of first batch
		endOff   int64       // offset after last batch (exclusive), 0 while active
		minEpoch int32       // min epoch across all batches
		maxEpoch int32       // max epoch across all batches
		size     int64       // file size in bytes
		index    []batchMeta // per-batch metadata, nil = evicted
		readFile file        // cached read handle for sealed segments, nil = not yet opened

		// maxTimestamp and maxBatch are a real segment's
		// maxTimestampSoFar and maxTimestampAndOffsetSoFar: the max
		// timestamp over every batch in the file, floored at -1, and
		// the first batch in the file to carry it. Unlike the index,
		// they keep counting batches deleted from below the log start
		// offset: their bytes stay in the file until the whole segment
		// goes, and the broker still answers ListOffsets -3 with them.
		// A batch whose max timestamp is below -1 never raises
		// maxTimestamp; when nothing has, maxBatch is the first batch
		// at exactly -1 (the broker searches for its -1 running max),
		// or empty (nbytes 0) if there is none.
		maxTimestamp int64
		maxBatch     batchMeta
		// lastModified is the file's modification time in ms, which a
		// real segment answers as its largest timestamp while no batch
		// has a timestamp at or above zero, and which ListOffsets v0
		// lists by.
		lastModified int64
		// maxEarlierTimestamp is the max of largestTimestamp over this
		// and every earlier segment, so ListOffsets can binary search
		// for the first segment that reaches a timestamp. Set on
		// append; rebuildMaxTimestampMeta recomputes it when segments
		// are dropped or loaded.
		maxEarlierTimestamp int64
	}

	// batchMeta is the in-memory index entry for a batch stored in a segment file.
	batchMeta struct {
		firstOffset         int64 // first record offset
		segPos              int64 // byte position within segment file
		maxEarlierTimestamp int64 // max timestamp of this and all earlier batches, for ListOffsets binary search
		firstTimestamp      int64
		maxTimestamp        int64
		producerID          int64 // needed for isBatchAborted in compaction
		lastOffsetDelta     int32
		nbytes              int32 // serialized batch size (RecordBatch wire bytes)
		epoch               int32
		numRecords          int32
		inTx                bool // in an uncommitted transaction
	}

	partData struct {
		abortedTxns []abortedTxnEntry // sorted by lastOffset, for read_committed fetch
		t           string
		p           int32
		dir         string

		highWatermark    int64
		lastStableOffset int64
		logStartOffset   int64
		epoch            int32 // current epoch
		maxTimestampSeen int64 // max MaxTimestamp across all batches (the running max for maxEarlierTimestamp)
		maxTimestampSeg  int   // index of the segment with the greatest max timestamp, the earliest on a tie
		nbytes           int64

		// PID-based LSO tracking: maps producer ID to earliest
		// uncommitted offset on this partition. LSO = min of all
		// values, or HWM if empty. Replaces per-batch inTx scanning.
		uncommittedPIDs map[int64]int64

		leader    *broker
		followers followers

		watch      map[*watchFetch]struct{}
		shareWatch map[*watchShareFetch]struct{}

		createdAt time.Time
		// rolledAt is when the log last became empty (creation, or the
		// trim or compaction that removed every segment): a real broker
		// then rolls an empty segment, whose modification time
		// ListOffsets v0 lists by while no batch exists.
		rolledAt time.Time

		// Segment state - used in all modes (memFS for in-memory, osFS for disk).
		// Segment files (.dat) contain pure RecordBatch wire bytes.
		// Index files (.idx) contain per-batch metadata (epoch, timestamp, flags).
		activeSegFile file          // open handle for active segment
		activeIdxFile file          // open handle for active index
		segments      []segmentInfo // all segments, sorted by base offset
	}

	followers []int32

	partBatch struct {
		kmsg.RecordBatch
		nbytes int
		epoch  int32 // epoch when appended

		// For list offsets, we may need to return the first offset
		// after a given requested timestamp. Client provided
		// timestamps can go forwards and backwards. We answer list
		// offsets with a binary search over the running max of
		// MaxTimestamp: even if this batch has a small timestamp,
		// this is produced _after_ a potentially higher timestamp,
		// so it is after it in the list offset response.
		//
		// When we drop batches, rebuildMaxTimestampMeta recomputes
		// the running max over the batches that remain.
		maxEarlierTimestamp int64

		inTx bool
	}
)

// MarshalText implements encoding.TextMarshaler, encoding uuid as base64.
// This enables uuid as JSON map keys and struct fields.
func (u uuid) MarshalText() ([]byte, error) {
	dst := make([]byte, base64.StdEncoding.EncodedLen(len(u)))
	base64.StdEncoding.Encode(dst, u[:])
	return dst, nil
}

// UnmarshalText implements encoding.TextUnmarshaler, decoding uuid from base64.
func (u *uuid) UnmarshalText(text []byte) error {
	_, err := base64.StdEncoding.Decode(u[:], text)
	return err
}

func (b *partBatch) meta(segPos int64) batchMeta {
	return batchMeta{
		firstOffset:         b.FirstOffset,
		segPos:              segPos,
		maxEarlierTimestamp: b.maxEarlierTimestamp,
		firstTimestamp:      b.FirstTimestamp,
		maxTimestamp:        b.MaxTimestamp,
		producerID:          b.ProducerID,
		lastOffsetDelta:     b.LastOffsetDelta,
		nbytes:              int32(b.nbytes),
		epoch:               b.epoch,
		numRecords:          b.NumRecords,
		inTx:                b.inTx,
	}
}

// normalizeTopicName normalizes a topic name for collision detection.
// Kafka considers topics that differ only in . vs _ as colliding.
func normalizeTopicName(t string) string {
	return strings.ReplaceAll(t, ".", "_")
}

func (d *data) mkt(t string, nparts, nreplicas int, configs map[string]*string) {
	if d.tps != nil {
		if _, exists := d.tps[t]; exists {
			panic("should have checked existence already")
		}
	}
	var id uuid
	for {
		id = randUUID()
		if _, exists := d.id2t[id]; !exists {
			break
		}
	}

	if nparts < 0 {
		nparts = d.c.cfg.defaultNumParts
	}
	if nreplicas < 0 {
		nreplicas = min(3, len(d.c.bs)) // cluster default
	}
	d.id2t[id] = t
	d.t2id[t] = id
	d.treplicas[t] = nreplicas
	d.tnorms[normalizeTopicName(t)] = t
	if configs != nil {
		d.tcfgs[t] = configs
	}
	for i := 0; i < nparts; i++ {
		p := int32(i)
		pd := d.tps.mkp(t, p, d.c.newPartData(p))
		pd.t = t
	}
}

func (c *Cluster) noLeader() *broker {
	return &broker{
		c:    c,
		node: -1,
	}
}

func (c *Cluster) newPartData(p int32) func() *partData {
	return func() *partData {
		return &partData{
			p:          p,
			dir:        defLogDir,
			leader:     c.bs[rand.Intn(len(c.bs))],
			watch:      make(map[*watchFetch]struct{}),
			shareWatch: make(map[*watchShareFetch]struct{}),
			createdAt:  time.Now(),
			rolledAt:   time.Now(),
		}
	}
}

// pushBatch appends a batch to the partition, writing it to the active
// segment file and building a batchMeta index entry. Returns the
// firstOffset assigned to the batch, or -1 if the segment write failed.
//
// If transactional, the producer's PID is registered in uncommittedPIDs
// so the LSO stays at the earliest uncommitted offset.
func (c *Cluster) pushBatch(pd *partData, nbytes int, b kmsg.RecordBatch, inTx bool) int64 {
	b.FirstOffset = pd.highWatermark
	b.PartitionLeaderEpoch = pd.epoch

	// A blackholed cluster skips the segment write and index but keeps
	// the offset, txn, and lso accounting below, so the producer still
	// sees a well formed response.
	if !c.cfg.blackholeProduce {
		maxEarlierTimestamp := b.MaxTimestamp
		if pd.hasBatches() && pd.maxTimestampSeen > maxEarlierTimestamp {
			maxEarlierTimestamp = pd.maxTimestampSeen
		}

		// Build the partBatch for segment encoding
		pb := &partBatch{
			RecordBatch:         b,
			nbytes:              nbytes,
			epoch:               pd.epoch,
			maxEarlierTimestamp: maxEarlierTimestamp,
			inTx:                inTx,
		}

		// Write to segment file and build index entry.
		// persistBatchToSegment creates the segment if needed.
		segPos := c.persistBatchToSegment(pd, pb)
		if segPos < 0 {
			return -1
		}
		active := &pd.segments[len(pd.segments)-1]
		meta := pb.meta(segPos)
		active.index = append(active.index, meta)
		active.updateEpochRange(pd.epoch)
		active.updateMaxBatch(meta, segPos == 0)
		active.lastModified = time.Now().UnixMilli()
		if n := len(pd.segments); n > 1 {
			active.maxEarlierTimestamp = max(active.largestTimestamp(), pd.segments[n-2].maxEarlierTimestamp)
		} else {
			active.maxEarlierTimestamp = active.largestTimestamp()
		}
		if active.maxTimestamp > pd.segments[pd.maxTimestampSeg].maxTimestamp {
			pd.maxTimestampSeg = len(pd.segments) - 1
		}
		pd.maxTimestampSeen = maxEarlierTimestamp
	}

	firstOffset := b.FirstOffset
	pd.highWatermark += int64(b.NumRecords)
	if inTx {
		if pd.uncommittedPIDs == nil {
			pd.uncommittedPIDs = make(map[int64]int64)
		}
		if existing, ok := pd.uncommittedPIDs[b.ProducerID]; !ok || b.FirstOffset < existing {
			pd.uncommittedPIDs[b.ProducerID] = b.FirstOffset
		}
	}
	if len(pd.uncommittedPIDs) == 0 {
		pd.lastStableOffset += int64(b.NumRecords)
	}
	pd.nbytes += int64(nbytes)
	for w := range pd.watch {
		w.push(pd, nbytes, inTx)
	}
	for w := range pd.shareWatch {
		w.fire()
	}
	return firstOffset
}

// updateMaxBatch folds a batch into the segment's maxTimestamp and
// maxBatch. first is true for the batch at the start of the file. On a
// tie the earlier batch keeps maxBatch, as on a real broker.
func (si *segmentInfo) updateMaxBatch(m batchMeta, first bool) {
	if first {
		si.maxTimestamp = -1
		si.maxBatch = batchMeta{}
	}
	switch {
	case m.maxTimestamp > si.maxTimestamp:
		si.maxTimestamp = m.maxTimestamp
		si.maxBatch = m
	case m.maxTimestamp == -1 && si.maxBatch.nbytes == 0:
		si.maxBatch = m
	}
}

// largestTimestamp is what a real segment's largestTimestamp answers:
// the max batch timestamp, or the file's modification time while no
// batch has a timestamp at or above zero.
func (si *segmentInfo) largestTimestamp() int64 {
	if si.maxTimestamp >= 0 {
		return si.maxTimestamp
	}
	return si.lastModified
}

// updateEpochRange updates the segment's min/max epoch from a batch epoch.
func (si *segmentInfo) updateEpochRange(epoch int32) {
	if len(si.index) <= 1 {
		si.minEpoch = epoch
		si.maxEpoch = epoch
	} else {
		if epoch < si.minEpoch {
			si.minEpoch = epoch
		}
		if epoch > si.maxEpoch {
			si.maxEpoch = epoch
		}
	}
}

// maxTimestampSegment returns the index of the segment with the greatest
// max timestamp, the earliest on a tie, or -1 if there are no segments.
// This is the segment a real broker answers ListOffsets -3 from.
func (pd *partData) maxTimestampSegment() int {
	if len(pd.segments) == 0 {
		return -1
	}
	return pd.maxTimestampSeg
}

// rebuildMaxTimestampMeta rebuilds each batch's maxEarlierTimestamp, each
// segment's maxEarlierTimestamp, maxTimestampSeg, and maxTimestampSeen
// from the batchMeta index and the segments' max batches. Called after
// loading segments from disk and after batches are dropped, so the
// running max only covers batches that still exist.
func (pd *partData) rebuildMaxTimestampMeta() {
	pd.maxTimestampSeg = 0
	for si := range pd.segments {
		seg := &pd.segments[si]
		seg.maxEarlierTimestamp = seg.largestTimestamp()
		if si > 0 {
			seg.maxEarlierTimestamp = max(seg.maxEarlierTimestamp, pd.segments[si-1].maxEarlierTimestamp)
		}
		if seg.maxTimestamp > pd.segments[pd.maxTimestampSeg].maxTimestamp {
			pd.maxTimestampSeg = si
		}
	}
	pd.maxTimestampSeen = 0
	first := true
	pd.eachBatchMeta(func(_, _ int, m *batchMeta) bool {
		if first || m.maxTimestamp > pd.maxTimestampSeen {
			pd.maxTimestampSeen = m.maxTimestamp
		}
		first = false
		m.maxEarlierTimestamp = pd.maxTimestampSeen
		return true
	})
}

// hasBatches returns true if there is at least one batch in any segment.
func (pd *partData) hasBatches() bool {
	for i := range pd.segments {
		if len(pd.segments[i].index) > 0 {
			return true
		}
	}
	return false
}

// hasNBatches returns true if there are at least n batches across all segments.
func (pd *partData) hasNBatches(n int) bool {
	count := 0
	for i := range pd.segments {
		count += len(pd.segments[i].index)
		if count >= n {
			return true
		}
	}
	return false
}

// totalBatches returns the total number of batches across all segments.
func (pd *partData) totalBatches() int {
	n := 0
	for i := range pd.segments {
		n += len(pd.segments[i].index)
	}
	return n
}

// pruneEmptySegments removes segments with no index entries (entirely
// corrupt segment files). Must be called after loading before any code
// that indexes into segment indices.
func (pd *partData) pruneEmptySegments() {
	n := 0
	for i := range pd.segments {
		if len(pd.segments[i].index) > 0 {
			pd.segments[n] = pd.segments[i]
			n++
		}
	}
	pd.segments = pd.segments[:n]
}

// eachBatchMeta calls fn for each batchMeta across all segments.
func (pd *partData) eachBatchMeta(fn func(segIdx, metaIdx int, m *batchMeta) bool) {
	for si := range pd.segments {
		seg := &pd.segments[si]
		for mi := range seg.index {
			if !fn(si, mi, &seg.index[mi]) {
				return
			}
		}
	}
}

// findBatchMeta does a two-level binary search for the first batch where
// field(batch) >= target. The field must be monotonically non-decreasing
// across batches (e.g. epoch). Returns (-1, -1, nil) if no batch
// satisfies the condition.
func (pd *partData) findBatchMeta(target int64, field func(*batchMeta) int64) (segIdx, metaIdx int, meta *batchMeta) {
	// Level 1: find first segment whose last batch has field >= target.
	si := sort.Search(len(pd.segments), func(i int) bool {
		seg := &pd.segments[i]
		return len(seg.index) > 0 && field(&seg.index[len(seg.index)-1]) >= target
	})
	if si >= len(pd.segments) {
		return -1, -1, nil
	}
	// Level 2: find first batch in that segment with field >= target.
	seg := &pd.segments[si]
	mi := sort.Search(len(seg.index), func(i int) bool {
		return field(&seg.index[i]) >= target
	})
	if mi >= len(seg.index) {
		return -1, -1, nil
	}
	return si, mi, &seg.index[mi]
}

// searchOffset finds the batch containing offset o in the batchMeta index.
// Uses a two-level binary search: first find the segment (by base offset),
// then search within that segment's index.
//
// segIdx, metaIdx: position of the found batch within pd.segments
// found: if the offset was found
// atEnd: if true, the requested offset is at or past the HWM - "requesting at the end, wait"
func (pd *partData) searchOffset(o int64) (segIdx, metaIdx int, found, atEnd bool) {
	if o < pd.logStartOffset || o > pd.highWatermark {
		return 0, 0, false, false
	}
	if len(pd.segments) == 0 || !pd.hasBatches() {
		return 0, 0, false, o == pd.logStartOffset
	}

	// Check if at the end (at or past last batch's end offset).
	lastSeg := &pd.segments[len(pd.segments)-1]
	if len(lastSeg.index) > 0 {
		lastMeta := &lastSeg.index[len(lastSeg.index)-1]
		if endOff := lastMeta.firstOffset + int64(lastMeta.lastOffsetDelta) + 1; o >= endOff {
			return 0, 0, false, true
		}
	}

	// Level 1: binary search for the segment containing offset o.
	// sort.Search returns the first segment whose base is > o; we want
	// the segment before that (the last segment whose base <= o).
	si := max(sort.Search(len(pd.segments), func(i int) bool {
		return pd.segments[i].base > o
	})-1, 0)

	// Level 2: binary search within the segment's index.
	idx := &pd.segments[si].index
	mi, ok := sort.Find(len(*idx), func(i int) int {
		m := &(*idx)[i]
		if o < m.firstOffset {
			return -1
		}
		if o >= m.firstOffset+int64(m.lastOffsetDelta)+1 {
			return 1
		}
		return 0
	})

	// After compaction, offsets may land in gaps between batches.
	// Skip forward to the next available batch in this or later segments.
	if !ok {
		if mi < len(*idx) {
			return si, mi, true, false
		}
		// Past end of this segment's index - try next segment.
		for si++; si < len(pd.segments); si++ {
			if len(pd.segments[si].index) > 0 {
				return si, 0, true, false
			}
		}
		return 0, 0, false, false
	}
	return si, mi, true, false
}

func (c *Cluster) trimLeft(pd *partData) {
	// Trim batchMeta segments, deleting fully-trimmed segment + index files.
	pdir := partDir(c.storageDir, pd.t, pd.p)
outer:
	for len(pd.segments) > 0 {
		seg := &pd.segments[0]
		for len(seg.index) > 0 {
			m := &seg.index[0]
			finRec := m.firstOffset + int64(m.lastOffsetDelta)
			if finRec >= pd.logStartOffset {
				break outer
			}
			pd.nbytes -= int64(m.nbytes)
			seg.index = seg.index[1:]
		}
		if seg.readFile != nil {
			seg.readFile.Close()
		}
		c.fs.Remove(filepath.Join(pdir, segmentFileName(seg.base)))
		c.fs.Remove(filepath.Join(pdir, indexFileName(seg.base)))
		pd.segments = pd.segments[1:]
	}
	// If all segments were trimmed, close active handles
	// so the next produce creates fresh files.
	if len(pd.segments) == 0 {
		pd.closeActiveFiles(false)
		pd.rolledAt = time.Now()
	}
	pd.rebuildMaxTimestampMeta()
	pd.trimAbortedTxns()
}

// legacyOffsetsBefore answers ListOffsets v0 the way a broker that still
// served it did (UnifiedLog.legacyFetchOffsetsBefore): up to maxNum
// offsets, descending, from the start offset of each segment last
// modified at or before ts, plus the log end offset as of now. -1 lists
// from the end, -2 from the start.
func (pd *partData) legacyOffsetsBefore(ts int64, maxNum int32) []int64 {
	type offsetTime struct{ offset, modified int64 }
	var entries []offsetTime
	for i := range pd.segments {
		seg := &pd.segments[i]
		entries = append(entries, offsetTime{max(seg.base, pd.logStartOffset), seg.lastModified})
	}
	if len(pd.segments) == 0 {
		entries = append(entries, offsetTime{pd.logStartOffset, pd.rolledAt.UnixMilli()})
	} else {
		entries = append(entries, offsetTime{pd.highWatermark, time.Now().UnixMilli()})
	}
	start := len(entries) - 1
	switch ts {
	case -1:
	case -2:
		start = 0
	default:
		for start >= 0 && entries[start].modified > ts {
			start--
		}
	}
	var offsets []int64
	for ; start >= 0 && int32(len(offsets)) < maxNum; start-- {
		offsets = append(offsets, entries[start].offset)
	}
	return offsets
}

func (pd *partData) closeActiveFiles(doSync bool) {
	if pd.activeSegFile != nil {
		if doSync {
			pd.activeSegFile.Sync()
		}
		pd.activeSegFile.Close()
		pd.activeSegFile = nil
	}
	if pd.activeIdxFile != nil {
		if doSync {
			pd.activeIdxFile.Sync()
		}
		pd.activeIdxFile.Close()
		pd.activeIdxFile = nil
	}
}

// closeAllFiles closes active write handles and all cached read handles.
// Used on shutdown and topic deletion.
func (pd *partData) closeAllFiles(doSync bool) {
	pd.closeActiveFiles(doSync)
	for i := range pd.segments {
		if pd.segments[i].readFile != nil {
			pd.segments[i].readFile.Close()
			pd.segments[i].readFile = nil
		}
	}
}

// recalculateLSO recalculates the last stable offset from uncommittedPIDs.
// LSO = min of all uncommittedPIDs values, or HWM if empty.
func (pd *partData) recalculateLSO() {
	if len(pd.uncommittedPIDs) == 0 {
		pd.lastStableOffset = pd.highWatermark
		return
	}
	lso := pd.highWatermark
	for _, off := range pd.uncommittedPIDs {
		if off < lso {
			lso = off
		}
	}
	pd.lastStableOffset = lso
}
