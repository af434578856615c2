package kfake

import (
	"os"
	"path/filepath"
	"strconv"
)

///////////////////////////////
// LIVE SYNC PERSIST HELPERS
///////////////////////////////

// openSegmentFiles opens the active segment (O_RDWR for read+write) and
// index file (O_WRONLY) for the last segment in pd.segments.
func (c *Cluster) openSegmentFiles(pd *partData, pdir string) error {
	base := pd.segments[len(pd.segments)-1].base
	segPath := filepath.Join(pdir, segmentFileName(base))
	sf, err := c.fs.OpenFile(segPath, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	idxPath := filepath.Join(pdir, indexFileName(base))
	idxF, err := c.fs.OpenFile(idxPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		sf.Close()
		return err
	}
	pd.activeSegFile = sf
	pd.activeIdxFile = idxF
	return nil
}

// persistBatchToSegment writes a batch to the active segment file.
// Returns the byte position of the entry within the segment file
// (for batchMeta.segPos), or -1 on failure.
func (c *Cluster) persistBatchToSegment(pd *partData, b *partBatch) int64 {
	fsys := c.fs
	pdir := partDir(c.storageDir, pd.t, pd.p)

	// Ensure segment exists in memory before any I/O that might fail.
	if len(pd.segments) == 0 {
		pd.segments = append(pd.segments, segmentInfo{base: b.FirstOffset})
	}

	if pd.activeSegFile == nil {
		if err := fsys.MkdirAll(pdir, 0o755); err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "persist batch mkdir %s: %v", pdir, err)
			return -1
		}
		if err := c.openSegmentFiles(pd, pdir); err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "persist batch open %s-%d: %v", pd.t, pd.p, err)
			return -1
		}
	}

	// Roll the segment if needed.
	active := &pd.segments[len(pd.segments)-1]
	if active.size >= c.segmentBytes(pd.t) {
		active.endOff = b.FirstOffset
		pd.closeActiveFiles(c.cfg.syncWrites)
		pd.segments = append(pd.segments, segmentInfo{base: b.FirstOffset})
		if err := c.openSegmentFiles(pd, pdir); err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "persist batch open %s-%d: %v", pd.t, pd.p, err)
			return -1
		}
		active = &pd.segments[len(pd.segments)-1]
	}

	// Write RecordBatch to segment file, then index entry.
	segPos := active.size
	bp := encodeBatch(b)
	defer func() { *bp = (*bp)[:0]; batchPool.Put(bp) }()
	batchSize := int64(len(*bp))
	_, segErr := pd.activeSegFile.Write(*bp)
	if segErr == nil {
		idx := encodeIndexEntry(b.epoch, b.maxEarlierTimestamp, b.inTx)
		_, segErr = pd.activeIdxFile.Write(idx[:])
	}
	if segErr != nil {
		c.cfg.logger.Logf(LogLevelWarn, "persist batch %s-%d: %v", pd.t, pd.p, segErr)
		pd.activeSegFile.Truncate(active.size)
		pd.closeActiveFiles(false)
		return -1
	}

	// With SyncWrites, fsync every batch for immediate durability.
	// Without it, we rely on the OS page cache and sync only on
	// segment roll and shutdown (like real Kafka's default).
	if c.cfg.syncWrites {
		pd.activeSegFile.Sync()
		pd.activeIdxFile.Sync()
	}

	active.size += batchSize
	return segPos
}

// persistGroupEntry appends a group log entry.
// Called from group handlers when dataDir is set.
func (c *Cluster) persistGroupEntry(entry groupLogEntry) error {
	if !c.persist() || c.dead.Load() {
		return nil
	}
	if c.groupsLogFile == nil {
		path := filepath.Join(c.cfg.dataDir, "groups.log")
		f, err := c.fs.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "persist group entry open: %v", err)
			return err
		}
		c.groupsLogFile = f
	}
	n, err := appendLogEntry(c.groupsLogFile, entry, c.cfg.syncWrites)
	if err != nil {
		c.cfg.logger.Logf(LogLevelWarn, "persist group entry write: %v", err)
		c.groupsLogFile.Close()
		c.groupsLogFile = nil
		return err
	}
	c.groupsLogSize += int64(n)
	if c.groupsLogSize >= c.stateLogCompactBytes() {
		c.needsGroupsCompact = true
	}
	return nil
}

// persistPIDEntry appends a PID log entry.
// Called from txn handlers when dataDir is set.
func (c *Cluster) persistPIDEntry(entry pidLogEntry) error {
	if !c.persist() || c.dead.Load() {
		return nil
	}
	if c.pidsLogFile == nil {
		path := filepath.Join(c.cfg.dataDir, "pids.log")
		f, err := c.fs.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "persist pid entry open: %v", err)
			return err
		}
		c.pidsLogFile = f
	}
	n, err := appendLogEntry(c.pidsLogFile, entry, c.cfg.syncWrites)
	if err != nil {
		c.cfg.logger.Logf(LogLevelWarn, "persist pid entry write: %v", err)
		c.pidsLogFile.Close()
		c.pidsLogFile = nil
		return err
	}
	c.pidsLogSize += int64(n)
	if c.pidsLogSize >= c.stateLogCompactBytes() {
		c.compactPIDsLog()
	}
	return nil
}

// persistState is a shared helper for live-sync state file writes.
// It calls the given save function and logs on error.
func (c *Cluster) persistState(name string, fn func(fs, string) error) {
	if !c.persist() {
		return
	}
	if err := fn(c.fs, c.cfg.dataDir); err != nil {
		c.cfg.logger.Logf(LogLevelWarn, "persist %s: %v", name, err)
	}
}

func (c *Cluster) stateLogCompactBytes() int64 {
	if v, ok := c.bcfgs["state.log.compact.bytes"]; ok && v != nil {
		if n, err := strconv.ParseInt(*v, 10, 64); err == nil {
			return n
		}
	}
	return 10 << 20
}

func (c *Cluster) compactPIDsLog() {
	if err := c.savePIDsLog(c.fs, c.cfg.dataDir); err != nil {
		c.cfg.logger.Logf(LogLevelWarn, "compact pids.log: %v", err)
		return
	}
	path := filepath.Join(c.cfg.dataDir, "pids.log")
	if info, err := c.fs.Stat(path); err == nil {
		c.pidsLogSize = info.Size()
	}
}

// compactGroupsLog rewrites groups.log keeping only the latest entry per
// key. Unlike saveGroupsLog, which collects from live group state, this
// compacts from the file itself.
func (c *Cluster) compactGroupsLog() {
	c.needsGroupsCompact = false

	// Close the live append handle so any pending data is flushed
	// before we read the file.
	if c.groupsLogFile != nil {
		if c.cfg.syncWrites {
			c.groupsLogFile.Sync()
		}
		c.groupsLogFile.Close()
		c.groupsLogFile = nil
	}

	path := filepath.Join(c.cfg.dataDir, "groups.log")
	raw, err := c.fs.ReadFile(path)
	if err != nil {
		if !os.IsNotExist(err) {
			c.cfg.logger.Logf(LogLevelWarn, "compact groups.log: read: %v", err)
		}
		return
	}

	entries, _ := readEntries(raw)
	r := replayGroupsLog(entries)

	// Write compacted entries to tmp, then atomic rename.
	tmpPath := path + ".tmp"
	f, err := c.fs.OpenFile(tmpPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		c.cfg.logger.Logf(LogLevelWarn, "compact groups.log: create: %v", err)
		return
	}
	defer f.Close()
	var writeErr error
	write := func(data []byte) {
		if writeErr == nil {
			writeErr = writeEntry(f, data, false)
		}
	}
	for _, data := range r.metas {
		write(data)
	}
	for _, data := range r.statics {
		write(data)
	}
	for _, data := range r.commits {
		write(data)
	}
	if writeErr != nil {
		c.cfg.logger.Logf(LogLevelWarn, "compact groups.log: write: %v", writeErr)
		c.fs.Remove(tmpPath)
		return
	}
	if c.cfg.syncWrites {
		if err := f.Sync(); err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "compact groups.log: sync: %v", err)
			c.fs.Remove(tmpPath)
			return
		}
	}
	if err := c.fs.Rename(tmpPath, path); err != nil {
		c.cfg.logger.Logf(LogLevelWarn, "compact groups.log: rename: %v", err)
		return
	}
	if info, err := c.fs.Stat(path); err == nil {
		c.groupsLogSize = info.Size()
	}
}

func (c *Cluster) persistTopicsState()        { c.persistState("topics", c.saveTopics) }
func (c *Cluster) persistACLsState()          { c.persistState("acls", c.saveACLs) }
func (c *Cluster) persistSASLState()          { c.persistState("sasl", c.saveSASL) }
func (c *Cluster) persistBrokerConfigsState() { c.persistState("broker configs", c.saveBrokerConfigs) }
func (c *Cluster) persistQuotasState()        { c.persistState("quotas", c.saveQuotas) }
