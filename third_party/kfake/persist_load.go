package kfake

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

//////////////////////
// LOAD (STARTUP)
//////////////////////

// cleanupTmpFiles removes orphaned .tmp files left by interrupted
// writeJSONFile calls. These are incomplete writes that should be discarded.
// Checks both the top-level dir and partition subdirectories.
func cleanupTmpFiles(fsys fs, dir string) {
	removeTmpIn := func(d string) {
		entries, err := fsys.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".tmp") {
				fsys.Remove(filepath.Join(d, e.Name()))
			}
		}
	}
	removeTmpIn(dir)
	partsDir := filepath.Join(dir, "partitions")
	pdirs, err := fsys.ReadDir(partsDir)
	if err != nil {
		return
	}
	for _, d := range pdirs {
		if d.IsDir() {
			removeTmpIn(filepath.Join(partsDir, d.Name()))
		}
	}
}

// loadFromDisk loads persisted state into the cluster.
// Returns true if persisted state was found and loaded, false if no data dir exists.
func (c *Cluster) loadFromDisk() (bool, error) {
	fsys := c.fs
	dir := c.cfg.dataDir

	// Check if meta.json exists
	metaBytes, err := fsys.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading meta.json: %w", err)
	}

	var meta persistMeta
	if err := json.Unmarshal(metaBytes, &meta); err != nil {
		return false, fmt.Errorf("parsing meta.json: %w", err)
	}
	if meta.Version > currentPersistVersion {
		return false, fmt.Errorf("meta.json version %d is newer than supported %d", meta.Version, currentPersistVersion)
	}
	c.cfg.clusterID = meta.ClusterID

	// Clean up orphaned .tmp files from interrupted writeJSONFile calls
	cleanupTmpFiles(fsys, dir)

	// Load broker configs first (segment configs needed by topics),
	// then topics (needed by partitions), then partitions (may
	// detect crash-aborted PIDs).
	var (
		crashAbortedMu   sync.Mutex
		crashAbortedPIDs = make(map[int64]struct{})
	)
	if err := errors.Join(
		c.loadBrokerConfigs(fsys, dir),
		c.loadTopics(fsys, dir),
		c.loadPartitions(fsys, dir, &crashAbortedMu, crashAbortedPIDs),
	); err != nil {
		return false, err
	}

	// Load PIDs, then bump epoch for PIDs that had in-flight
	// transactions at crash time.
	if err := c.loadPIDsLog(fsys, dir); err != nil {
		return false, err
	}
	for pid := range crashAbortedPIDs {
		if pidinf, ok := c.pids.ids[pid]; ok {
			pidinf.epoch++
		}
	}

	if err := errors.Join(
		c.loadGroupsLog(fsys, dir),
		c.loadACLs(fsys, dir),
		c.loadSASL(fsys, dir),
		c.loadQuotas(fsys, dir),
		c.loadSeqWindows(fsys, dir),
	); err != nil {
		return false, err
	}

	if err := c.loadSessionState(); err != nil {
		c.cfg.logger.Logf(LogLevelWarn, "load session state: %v", err)
	}

	return true, nil
}

func (c *Cluster) loadBrokerConfigs(fsys fs, dir string) error {
	var pbc persistBrokerConfigs
	if found, err := readJSONFile(fsys, filepath.Join(dir, "broker_configs.json"), &pbc); err != nil || !found {
		return err
	}
	// Merge: config overrides from NewCluster opts take precedence
	m := make(map[string]*string, len(pbc.Configs))
	for k, v := range pbc.Configs {
		m[k] = &v
	}
	// Apply overrides from cfg.brokerConfigs
	for k, v := range c.cfg.brokerConfigs {
		if v == "" {
			m[k] = nil
		} else {
			m[k] = &v
		}
	}
	c.bcfgs = m
	return nil
}

func (c *Cluster) loadTopics(fsys fs, dir string) error {
	var pt persistTopics
	if found, err := readJSONFile(fsys, filepath.Join(dir, "topics.json"), &pt); err != nil || !found {
		return err
	}

	for _, t := range pt.Topics {
		c.data.id2t[t.ID] = t.Name
		c.data.t2id[t.Name] = t.ID
		c.data.treplicas[t.Name] = t.Replicas
		c.data.tnorms[normalizeTopicName(t.Name)] = t.Name

		if len(t.Configs) > 0 {
			cfgs := make(map[string]*string, len(t.Configs))
			for k, v := range t.Configs {
				cfgs[k] = &v
			}
			c.data.tcfgs[t.Name] = cfgs
		}

		// Create partition data entries (batches loaded separately)
		for p := range t.Partitions {
			pd := c.data.tps.mkp(t.Name, int32(p), c.newPartData(int32(p)))
			pd.t = t.Name
		}
	}
	return nil
}

func (c *Cluster) loadPartitions(fsys fs, dir string, crashAbortedMu *sync.Mutex, crashAbortedPIDs map[int64]struct{}) error {
	return c.forEachPartition(func(topic string, part int32, pd *partData) error {
		return c.loadPartition(fsys, dir, topic, part, pd, crashAbortedMu, crashAbortedPIDs)
	})
}

func (c *Cluster) loadPartition(fsys fs, dir, topic string, part int32, pd *partData, crashAbortedMu *sync.Mutex, crashAbortedPIDs map[int64]struct{}) error {
	pdir := partDir(dir, topic, part)

	// Try snapshot first
	snapData, err := fsys.ReadFile(filepath.Join(pdir, "snapshot.json"))
	if err != nil && !os.IsNotExist(err) {
		return err
	}

	// Find segment files
	entries, err := fsys.ReadDir(pdir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil // no data yet
		}
		return err
	}

	var segFiles []int64
	for _, e := range entries {
		name := e.Name()
		if len(name) > 4 && name[len(name)-4:] == ".dat" {
			base, err := strconv.ParseInt(name[:len(name)-4], 10, 64)
			if err == nil {
				segFiles = append(segFiles, base)
			}
		}
	}
	slices.Sort(segFiles)

	// Try using snapshot for fast startup
	if snapData != nil && len(segFiles) > 0 {
		var snap persistPartSnapshot
		if err := json.Unmarshal(snapData, &snap); err == nil && snap.Version <= currentPersistVersion {
			if snapshotMatchesSegments(snap, segFiles, fsys, pdir) {
				return c.loadPartitionFromSnapshot(pd, snap, segFiles, fsys, pdir)
			}
		}
	}

	// Full replay - scan all segments
	return c.loadPartitionFullReplay(pd, segFiles, fsys, pdir, crashAbortedMu, crashAbortedPIDs)
}

func snapshotMatchesSegments(snap persistPartSnapshot, segFiles []int64, fsys fs, pdir string) bool {
	if len(snap.Segments) != len(segFiles) {
		return false
	}
	for i, ss := range snap.Segments {
		if ss.BaseOffset != segFiles[i] {
			return false
		}
		info, err := fsys.Stat(filepath.Join(pdir, segmentFileName(ss.BaseOffset)))
		if err != nil || info.Size() != ss.Size {
			return false
		}
	}
	return true
}

func (c *Cluster) loadPartitionFromSnapshot(pd *partData, snap persistPartSnapshot, segFiles []int64, fsys fs, pdir string) error {
	pd.highWatermark = snap.HighWatermark
	pd.lastStableOffset = snap.LastStableOffset
	pd.logStartOffset = snap.LogStartOffset
	pd.epoch = snap.Epoch
	if snap.LeaderNode >= 0 && int(snap.LeaderNode) < len(c.bs) {
		pd.leader = c.bs[snap.LeaderNode]
	}
	pd.createdAt = snap.CreatedAt
	pd.rolledAt = snap.CreatedAt
	for i, base := range segFiles {
		ss := snap.Segments[i]
		pd.segments = append(pd.segments, segmentInfo{
			base:     base,
			size:     ss.Size,
			minEpoch: ss.MinEpoch,
			maxEpoch: ss.MaxEpoch,
		})
		if _, err := c.loadSegmentBatches(pd, fsys, pdir, base); err != nil {
			return err
		}
	}

	for _, a := range snap.AbortedTxns {
		pd.abortedTxns = append(pd.abortedTxns, abortedTxnEntry{
			producerID:  a.ProducerID,
			firstOffset: a.FirstOffset,
			lastOffset:  a.LastOffset,
		})
	}
	pd.pruneEmptySegments()

	// Accumulate nbytes from batchMeta, skipping entries before
	// logStartOffset (partially-trimmed segments may have stale entries).
	pd.eachBatchMeta(func(_, _ int, m *batchMeta) bool {
		finRec := m.firstOffset + int64(m.lastOffsetDelta)
		if finRec >= pd.logStartOffset {
			pd.nbytes += int64(m.nbytes)
		}
		return true
	})

	pd.rebuildMaxTimestampMeta()

	// Validate HWM, LSO, and logStartOffset against actual loaded
	// batches. A truncated segment could leave fewer batches than the
	// snapshot expected.
	if pd.hasBatches() {
		lastSeg := &pd.segments[len(pd.segments)-1]
		last := &lastSeg.index[len(lastSeg.index)-1]
		maxHWM := last.firstOffset + int64(last.lastOffsetDelta) + 1
		if pd.highWatermark > maxHWM {
			pd.highWatermark = maxHWM
		}
		if pd.lastStableOffset > maxHWM {
			pd.lastStableOffset = maxHWM
		}
	} else {
		pd.highWatermark = pd.logStartOffset
		pd.lastStableOffset = pd.logStartOffset
	}
	if pd.logStartOffset > pd.highWatermark {
		pd.logStartOffset = pd.highWatermark
	}

	// Initialize active segment state so persistBatchToSegment
	// appends to the last segment instead of segment 0.
	c.initActiveSegment(pd, fsys, pdir)

	return nil
}

func (c *Cluster) loadPartitionFullReplay(pd *partData, segFiles []int64, fsys fs, pdir string, crashAbortedMu *sync.Mutex, crashAbortedPIDs map[int64]struct{}) error {
	// Load segments, getting full batches for crash recovery txn state.
	var batches []*partBatch
	for _, base := range segFiles {
		pd.segments = append(pd.segments, segmentInfo{base: base})
		loaded, err := c.loadSegmentBatches(pd, fsys, pdir, base)
		if err != nil {
			return err
		}
		batches = append(batches, loaded...)
	}
	pd.pruneEmptySegments()

	// Reconstruct partition metadata from batchMeta
	if pd.hasBatches() {
		firstSeg := &pd.segments[0]
		first := &firstSeg.index[0]
		lastSeg := &pd.segments[len(pd.segments)-1]
		last := &lastSeg.index[len(lastSeg.index)-1]
		pd.highWatermark = last.firstOffset + int64(last.lastOffsetDelta) + 1

		// logStartOffset: lossy reconstruction. The true value
		// (set by DeleteRecords) is only in the snapshot. On full
		// replay, the first batch's offset is a conservative lower
		// bound - the true logStartOffset may point into the middle
		// of this batch, so some "deleted" records may reappear.
		// This matches Kafka unclean leader election behavior.
		pd.logStartOffset = first.firstOffset

		// epoch: use the last batch's epoch (highest seen).
		pd.epoch = last.epoch
	}

	// Rebuild abortedTxns from control batches. On disk, data batches
	// are written with inTx=true at produce time; endTx clears it in
	// memory but not on disk. During full replay we identify completed
	// transactions by their control batches.
	activeTxns := make(map[int64]int64)   // producerID -> firstOffset
	activeEpochs := make(map[int64]int16) // producerID -> epoch of its last batch
	for _, b := range batches {
		isControl := b.Attributes&0x0020 != 0
		if !isControl {
			if b.inTx {
				if _, ok := activeTxns[b.ProducerID]; !ok {
					activeTxns[b.ProducerID] = b.FirstOffset
				}
				activeEpochs[b.ProducerID] = b.ProducerEpoch
			}
			continue
		}
		// Control batch: decode the key to determine commit vs abort.
		// Key is 4 bytes: version(2) + type(2). Type 0=ABORT, 1=COMMIT.
		// If the control record is unreadable, treat as abort (fail-safe).
		isAbort := true
		if len(b.Records) >= 4 {
			var rec kmsg.Record
			if err := rec.ReadFrom(b.Records); err == nil && len(rec.Key) >= 4 {
				controlType := int16(binary.BigEndian.Uint16(rec.Key[2:4]))
				isAbort = controlType == 0
			} else {
				c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d: malformed control batch at offset %d, treating as abort",
					pd.t, pd.p, b.FirstOffset)
			}
		} else {
			c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d: empty control batch at offset %d, treating as abort",
				pd.t, pd.p, b.FirstOffset)
		}
		firstOff, ok := activeTxns[b.ProducerID]
		if isAbort && ok {
			pd.abortedTxns = append(pd.abortedTxns, abortedTxnEntry{
				producerID:  b.ProducerID,
				firstOffset: firstOff,
				lastOffset:  b.FirstOffset,
			})
		}
		delete(activeTxns, b.ProducerID)
	}

	// Implicitly abort in-flight transactions. Any producer still in
	// activeTxns had a transaction open when the crash happened. We
	// treat these as aborted so the LSO is not stuck forever.
	if len(activeTxns) > 0 {
		crashAbortedMu.Lock()
		for pid, firstOff := range activeTxns {
			last := firstOff
			for _, b := range batches {
				if b.ProducerID == pid && b.inTx {
					end := b.FirstOffset + int64(b.LastOffsetDelta)
					if end > last {
						last = end
					}
				}
			}
			pd.abortedTxns = append(pd.abortedTxns, abortedTxnEntry{
				producerID:  pid,
				firstOffset: firstOff,
				lastOffset:  last,
			})
			crashAbortedPIDs[pid] = struct{}{}
		}
		crashAbortedMu.Unlock()
	}

	// abortedTxns must be sorted by lastOffset for binary search in
	// isBatchAborted and trimLeft. Implicit aborts (appended above) can
	// have earlier lastOffset values than control-batch-derived entries,
	// so we re-sort.
	slices.SortFunc(pd.abortedTxns, func(a, b abortedTxnEntry) int {
		return cmp.Compare(a.lastOffset, b.lastOffset)
	})

	// Rebuild LSO and other metadata
	pd.recalculateLSO()

	// Rebuild nbytes and the timestamp metadata from batchMeta
	pd.eachBatchMeta(func(_, _ int, m *batchMeta) bool {
		pd.nbytes += int64(m.nbytes)
		return true
	})
	pd.rebuildMaxTimestampMeta()

	// Restore createdAt from the first batch. newPartData sets createdAt
	// to time.Now() but on full replay we want the original creation time.
	if pd.hasBatches() {
		pd.createdAt = time.UnixMilli(pd.segments[0].index[0].firstTimestamp)
	}
	pd.rolledAt = pd.createdAt

	// Initialize active segment state so persistBatchToSegment
	// appends to the last segment instead of segment 0.
	c.initActiveSegment(pd, fsys, pdir)

	// Write an ABORT marker for every transaction the crash left open,
	// as Kafka's coordinator does when it aborts one. Without it the
	// log disagrees with itself: a read_committed consumer that gets
	// the aborted range and a later batch of the same producer ID
	// (a transactional ID reinitialized after the crash) in one
	// response skips that batch too, waiting for an abort marker that
	// never comes; and the next full replay, which only knows
	// transactions by their markers, takes these records for part of
	// that producer's next committed transaction.
	for pid, firstOff := range activeTxns {
		b, nbytes := txnMarkerBatch(pid, activeEpochs[pid], false, 0)
		markerOff := c.pushBatch(pd, nbytes, b, false)
		if markerOff < 0 {
			c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d: cannot write the abort marker of producer %d's transaction open at the crash",
				pd.t, pd.p, pid)
			continue
		}
		for i := range pd.abortedTxns {
			if e := &pd.abortedTxns[i]; e.producerID == pid && e.firstOffset == firstOff {
				e.lastOffset = markerOff
			}
		}
	}
	if len(activeTxns) > 0 {
		slices.SortFunc(pd.abortedTxns, func(a, b abortedTxnEntry) int {
			return cmp.Compare(a.lastOffset, b.lastOffset)
		})
		pd.recalculateLSO()
	}

	return nil
}

// initActiveSegment sets the last segment's size so that persistBatchToSegment
// appends to the right file and knows when to roll.
func (c *Cluster) initActiveSegment(pd *partData, fsys fs, pdir string) {
	if len(pd.segments) == 0 {
		return
	}
	active := &pd.segments[len(pd.segments)-1]
	if active.size > 0 {
		return // already set from snapshot
	}
	path := filepath.Join(pdir, segmentFileName(active.base))
	if info, err := fsys.Stat(path); err != nil {
		c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d: stat active segment %d: %v", pd.t, pd.p, active.base, err)
	} else {
		active.size = info.Size()
	}
}

// loadSegmentBatches reads batches from a segment file (.dat) and metadata
// from the parallel index file (.idx). Segment files contain pure RecordBatch
// wire bytes; entry boundaries are found via RecordBatch Length (big-endian
// int32 at byte 8). Index entries are fixed-size (15 bytes each).
func (c *Cluster) loadSegmentBatches(pd *partData, fsys fs, pdir string, base int64) ([]*partBatch, error) {
	segPath := filepath.Join(pdir, segmentFileName(base))
	raw, err := fsys.ReadFile(segPath)
	if err != nil {
		return nil, err
	}
	idxRaw, _ := fsys.ReadFile(filepath.Join(pdir, indexFileName(base)))
	var lastModified int64
	if info, err := fsys.Stat(segPath); err == nil {
		lastModified = info.ModTime().UnixMilli()
	}

	// Find the segmentInfo for this base to rebuild epoch ranges and index
	// from the actual batch data. The snapshot stores segment metadata
	// (base, size, epoch ranges), but on load we rebuild from the segment
	// file contents for crash safety - the snapshot may be stale.
	var seg *segmentInfo
	for i := range pd.segments {
		if pd.segments[i].base == base {
			seg = &pd.segments[i]
			seg.lastModified = lastModified
			break
		}
	}

	// Parse RecordBatch entries from segment file.
	var result []*partBatch
	pos := 0
	batchIdx := 0
	for {
		// Need at least FirstOffset(8) + Length(4) = 12 bytes.
		if pos+12 > len(raw) {
			break
		}
		batchLength := int(binary.BigEndian.Uint32(raw[pos+8 : pos+12]))
		if batchLength < 0 || batchLength > 1<<30 {
			break
		}
		batchSize := 12 + batchLength
		if pos+batchSize > len(raw) {
			break
		}
		rb, err := decodeBatchRaw(raw[pos : pos+batchSize])
		if err != nil {
			break // corruption - truncate
		}

		// Read metadata from index file (if available). The stored
		// maxEarlierTimestamp is not used: rebuildMaxTimestampMeta
		// recomputes it once every segment is loaded. A batch whose
		// entry is missing (a crash between the two writes) has the
		// epoch pushBatch stamped on it.
		epoch := rb.PartitionLeaderEpoch
		idxOff := batchIdx * indexEntrySize
		if idxOff+indexEntrySize <= len(idxRaw) {
			epoch, _, _, _ = decodeIndexEntry(idxRaw[idxOff : idxOff+indexEntrySize])
		}
		// A batch is in a transaction when it is a transactional data
		// batch, as pushBatch was told at produce time. The batch says
		// so itself: the index entry may be missing when the process
		// died between the two writes, and a transactional batch taken
		// for a plain one would read as committed.
		inTx := rb.Attributes&0x0010 != 0 && rb.Attributes&0x0020 == 0

		batch := &partBatch{
			RecordBatch: *rb,
			nbytes:      batchSize,
			epoch:       epoch,
			inTx:        inTx,
		}
		result = append(result, batch)
		if seg != nil {
			meta := batch.meta(int64(pos))
			seg.index = append(seg.index, meta)
			seg.updateEpochRange(batch.epoch)
			seg.updateMaxBatch(meta, pos == 0)
		}
		pos += batchSize
		batchIdx++
	}

	if pos < len(raw) {
		c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d segment %d: truncating %d corrupt bytes",
			pd.t, pd.p, base, len(raw)-pos)
		path := filepath.Join(pdir, segmentFileName(base))
		if f, err := fsys.OpenFile(path, os.O_WRONLY, 0o644); err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d segment %d: open for truncate: %v", pd.t, pd.p, base, err)
		} else {
			defer f.Close()
			if err := f.Truncate(int64(pos)); err != nil {
				c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d segment %d: truncate: %v", pd.t, pd.p, base, err)
			}
		}
	}

	// Make the index file list exactly the batches loaded: cut
	// orphaned entries that may remain from a prior crash where the
	// index write succeeded but the segment did not, and a crash
	// between a batch's write and its entry's (or in the middle of the
	// entry) leaves the index short or cut off. The entries written
	// after it on the next run would then describe the batch before
	// theirs, and the next crash of that kind would add to the
	// difference.
	if len(idxRaw) != batchIdx*indexEntrySize {
		c.completeIndex(pd, fsys, pdir, base, result, len(idxRaw)/indexEntrySize)
	}

	return result, nil
}

// completeIndex rewrites a segment's index file to list its batches
// exactly: it keeps the first whole entries (at most one per batch) and
// writes the rest from the loaded batches (the max earlier timestamp is
// recomputed on load, so each batch's own max timestamp will do).
func (c *Cluster) completeIndex(pd *partData, fsys fs, pdir string, base int64, batches []*partBatch, whole int) {
	keep := min(whole, len(batches))
	idxPath := filepath.Join(pdir, indexFileName(base))
	f, err := fsys.OpenFile(idxPath, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d segment %d: open index: %v", pd.t, pd.p, base, err)
		return
	}
	defer f.Close()
	if err := f.Truncate(int64(keep * indexEntrySize)); err != nil {
		c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d segment %d: truncate index: %v", pd.t, pd.p, base, err)
		return
	}
	var entries []byte
	for _, b := range batches[keep:] {
		e := encodeIndexEntry(b.epoch, b.MaxTimestamp, b.inTx)
		entries = append(entries, e[:]...)
	}
	if len(entries) > 0 {
		if _, err := f.Seek(int64(keep*indexEntrySize), io.SeekStart); err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d segment %d: seek index: %v", pd.t, pd.p, base, err)
			return
		}
		if _, err := f.Write(entries); err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "partition %s-%d segment %d: complete index: %v", pd.t, pd.p, base, err)
			return
		}
	}
	if c.cfg.syncWrites {
		f.Sync()
	}
}
