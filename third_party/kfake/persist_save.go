package kfake

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"
)

//////////////////////
// SAVE (SHUTDOWN)
//////////////////////

// saveToDisk writes all cluster state to disk. Called during orderly shutdown.
func (c *Cluster) saveToDisk() error {
	fsys := c.fs
	dir := c.cfg.dataDir

	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}

	return errors.Join(
		writeJSONFile(fsys, filepath.Join(dir, "meta.json"), persistMeta{
			Version:   currentPersistVersion,
			ClusterID: c.cfg.clusterID,
		}),
		c.saveTopics(fsys, dir),
		c.saveACLs(fsys, dir),
		c.saveSASL(fsys, dir),
		c.saveBrokerConfigs(fsys, dir),
		c.saveQuotas(fsys, dir),
		c.savePartitions(fsys, dir),
		c.saveGroupsLog(fsys, dir),
		c.savePIDsLog(fsys, dir),
		c.saveSeqWindows(fsys, dir),
	)
}

func (c *Cluster) saveTopics(fsys fs, dir string) error {
	var pts []persistTopic
	for t, id := range c.data.t2id {
		var cfgs map[string]string
		for k, v := range c.data.tcfgs[t] {
			if v != nil {
				if cfgs == nil {
					cfgs = make(map[string]string)
				}
				cfgs[k] = *v
			}
		}
		nparts := 0
		if ps, ok := c.data.tps[t]; ok {
			nparts = len(ps)
		}
		pts = append(pts, persistTopic{
			Name:       t,
			ID:         id,
			Partitions: nparts,
			Replicas:   c.data.treplicas[t],
			Configs:    cfgs,
		})
	}
	return writeJSONFile(fsys, filepath.Join(dir, "topics.json"), persistTopics{
		Version: currentPersistVersion,
		Topics:  pts,
	})
}

func (c *Cluster) saveACLs(fsys fs, dir string) error {
	var pa []persistACL
	for _, a := range c.acls.acls {
		pa = append(pa, persistACL{
			Principal:    a.principal,
			Host:         a.host,
			ResourceType: int8(a.resourceType),
			ResourceName: a.resourceName,
			Pattern:      int8(a.pattern),
			Operation:    int8(a.operation),
			Permission:   int8(a.permission),
		})
	}
	return writeJSONFile(fsys, filepath.Join(dir, "acls.json"), persistACLs{
		Version: currentPersistVersion,
		ACLs:    pa,
	})
}

func scramToPersist(m map[string]scramAuth) map[string]persistScram {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]persistScram, len(m))
	for k, v := range m {
		out[k] = persistScram{Mechanism: v.mechanism, Salt: v.salt, SaltedPass: v.saltedPass, Iterations: v.iterations}
	}
	return out
}

func persistToScram(m map[string]persistScram) map[string]scramAuth {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]scramAuth, len(m))
	for k, v := range m {
		out[k] = scramAuth{mechanism: v.Mechanism, salt: v.Salt, saltedPass: v.SaltedPass, iterations: v.Iterations}
	}
	return out
}

func (c *Cluster) saveSASL(fsys fs, dir string) error {
	ps := persistSASL{Version: currentPersistVersion}
	if len(c.sasls.plain) > 0 {
		ps.Plain = maps.Clone(c.sasls.plain)
	}
	ps.Scram256 = scramToPersist(c.sasls.scram256)
	ps.Scram512 = scramToPersist(c.sasls.scram512)
	return writeJSONFile(fsys, filepath.Join(dir, "sasl.json"), ps)
}

func (c *Cluster) saveBrokerConfigs(fsys fs, dir string) error {
	cfgs := make(map[string]string)
	for k, v := range c.bcfgs {
		if v != nil {
			cfgs[k] = *v
		}
	}
	return writeJSONFile(fsys, filepath.Join(dir, "broker_configs.json"), persistBrokerConfigs{
		Version: currentPersistVersion,
		Configs: cfgs,
	})
}

func (c *Cluster) saveQuotas(fsys fs, dir string) error {
	var pqs []persistQuota
	for _, qe := range c.quotas {
		var entity []persistQuotaEntityComponent
		for _, ec := range qe.entity {
			entity = append(entity, persistQuotaEntityComponent{
				Type: ec.entityType,
				Name: ec.name,
			})
		}
		pqs = append(pqs, persistQuota{
			Entity: entity,
			Values: qe.values,
		})
	}
	return writeJSONFile(fsys, filepath.Join(dir, "quotas.json"), persistQuotas{
		Version: currentPersistVersion,
		Quotas:  pqs,
	})
}

// forEachPartition runs fn concurrently on every partition, returning
// the first error encountered.
func (c *Cluster) forEachPartition(fn func(topic string, part int32, pd *partData) error) error {
	type partJob struct {
		topic string
		part  int32
		pd    *partData
	}
	var jobs []partJob
	c.data.tps.each(func(t string, p int32, pd *partData) {
		jobs = append(jobs, partJob{t, p, pd})
	})

	var mu sync.Mutex
	var firstErr error
	setErr := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}

	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func(j partJob) {
			defer wg.Done()
			if err := fn(j.topic, j.part, j.pd); err != nil {
				setErr(fmt.Errorf("partition %s-%d: %w", j.topic, j.part, err))
			}
		}(j)
	}
	wg.Wait()
	return firstErr
}

func (c *Cluster) savePartitions(fsys fs, dir string) error {
	return c.forEachPartition(func(topic string, part int32, pd *partData) error {
		return c.savePartition(fsys, dir, topic, part, pd)
	})
}

func (c *Cluster) savePartition(fsys fs, dir, topic string, part int32, pd *partData) error {
	pdir := partDir(dir, topic, part)
	if err := fsys.MkdirAll(pdir, 0o755); err != nil {
		return err
	}

	pd.closeAllFiles(c.cfg.syncWrites)

	// Build snapshot segment metadata from pd.segments.
	// Segment files are already on disk (written by persistBatchToSegment
	// on every produce, and updated by rebuildSegments after compaction).
	var snapSegments []persistSegmentInfo
	for _, si := range pd.segments {
		psi := persistSegmentInfo{
			BaseOffset: si.base,
			Size:       si.size,
			MinEpoch:   si.minEpoch,
			MaxEpoch:   si.maxEpoch,
		}
		// If size is not tracked (e.g., loaded from older snapshot),
		// stat the file to get it.
		if psi.Size == 0 {
			path := filepath.Join(pdir, segmentFileName(si.base))
			if info, err := fsys.Stat(path); err == nil {
				psi.Size = info.Size()
			}
		}
		snapSegments = append(snapSegments, psi)
	}

	// Write partition snapshot
	var abortedTxns []persistAbortedTxn
	for _, a := range pd.abortedTxns {
		abortedTxns = append(abortedTxns, persistAbortedTxn{
			ProducerID:  a.producerID,
			FirstOffset: a.firstOffset,
			LastOffset:  a.lastOffset,
		})
	}
	snap := persistPartSnapshot{
		Version:          currentPersistVersion,
		HighWatermark:    pd.highWatermark,
		LastStableOffset: pd.lastStableOffset,
		LogStartOffset:   pd.logStartOffset,
		Epoch:            pd.epoch,
		LeaderNode:       pd.leader.node,
		MaxTimestamp:     pd.maxTimestampSeen,
		CreatedAt:        pd.createdAt,
		AbortedTxns:      abortedTxns,
		Segments:         snapSegments,
	}
	return writeJSONFile(fsys, filepath.Join(pdir, "snapshot.json"), snap)
}

// rebuildSegments deletes existing segment files for a partition and rewrites
// them from the given batches, rebuilding pd.segments with batchMeta. Called
// after compaction changes the batch set. Also resets active file handles.
func (c *Cluster) rebuildSegments(pd *partData, batches []*partBatch) {
	pdir := partDir(c.storageDir, pd.t, pd.p)

	pd.closeAllFiles(false)

	// Delete old segment + index files
	for _, seg := range pd.segments {
		c.fs.Remove(filepath.Join(pdir, segmentFileName(seg.base)))
		c.fs.Remove(filepath.Join(pdir, indexFileName(seg.base)))
	}
	pd.segments = nil

	if len(batches) == 0 {
		pd.rolledAt = time.Now()
		pd.rebuildMaxTimestampMeta()
		return
	}

	// Group batches into segments by size
	segMaxBytes := c.segmentBytes(pd.t)
	type segGroup struct {
		base    int64
		batches []*partBatch
		size    int64
	}
	var groups []segGroup
	for _, b := range batches {
		if len(groups) == 0 || groups[len(groups)-1].size >= segMaxBytes {
			groups = append(groups, segGroup{base: b.FirstOffset})
		}
		g := &groups[len(groups)-1]
		g.batches = append(g.batches, b)
		g.size += int64(b.nbytes)
	}

	// Write segment (.dat) and index (.idx) files.
	c.fs.MkdirAll(pdir, 0o755)
	for _, g := range groups {
		si := segmentInfo{base: g.base, lastModified: time.Now().UnixMilli()}
		segPath := filepath.Join(pdir, segmentFileName(g.base))
		idxPath := filepath.Join(pdir, indexFileName(g.base))
		sf, err := c.fs.OpenFile(segPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "rebuildSegments %s-%d: create %s: %v", pd.t, pd.p, segPath, err)
			continue
		}
		xf, err := c.fs.OpenFile(idxPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			sf.Close()
			c.cfg.logger.Logf(LogLevelWarn, "rebuildSegments %s-%d: create %s: %v", pd.t, pd.p, idxPath, err)
			continue
		}
		var pos int64
		for _, b := range g.batches {
			bp := encodeBatch(b)
			meta := b.meta(pos)
			_, err := sf.Write(*bp)
			batchSize := int64(len(*bp))
			*bp = (*bp)[:0]
			batchPool.Put(bp)
			if err != nil {
				c.cfg.logger.Logf(LogLevelWarn, "rebuildSegments %s-%d: write: %v", pd.t, pd.p, err)
				break
			}
			idx := encodeIndexEntry(b.epoch, b.maxEarlierTimestamp, b.inTx)
			if _, err := xf.Write(idx[:]); err != nil {
				c.cfg.logger.Logf(LogLevelWarn, "rebuildSegments %s-%d: write index: %v", pd.t, pd.p, err)
				break
			}
			si.index = append(si.index, meta)
			si.updateEpochRange(b.epoch)
			si.updateMaxBatch(meta, pos == 0)
			pos += batchSize
			si.size += batchSize
		}
		sf.Sync()
		sf.Close()
		xf.Sync()
		xf.Close()
		pd.segments = append(pd.segments, si)
	}
	pd.rebuildMaxTimestampMeta()
}

// saveGroupsLog writes a compacted groups.log from live group state.
// Called only at shutdown, where run() is inside the admin function and
// so is not handling requests that could change a group.
func (c *Cluster) saveGroupsLog(fsys fs, dir string) error {
	var allEntries []groupLogEntry
	for _, g := range c.groups.gs {
		allEntries = append(allEntries, c.collectGroupEntries(g)...)
	}

	path := filepath.Join(dir, "groups.log")
	tmpPath := path + ".tmp"
	f, err := fsys.OpenFile(tmpPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, e := range allEntries {
		if _, err := appendLogEntry(f, e, c.cfg.syncWrites); err != nil {
			return err
		}
	}
	if c.groupsLogFile != nil {
		c.groupsLogFile.Close()
		c.groupsLogFile = nil
	}
	return fsys.Rename(tmpPath, path)
}

// collectGroupEntries gathers all persistable state from a group.
func (*Cluster) collectGroupEntries(g *group) []groupLogEntry {
	var entries []groupLogEntry

	// Group metadata
	switch g.typ {
	case "consumer":
		entries = append(entries, g.meta848Entry())
	default:
		entries = append(entries, g.classicMetaEntry())
	}

	// Static members
	for instanceID, memberID := range g.staticMembers {
		entries = append(entries, g.staticMemberEntry(instanceID, memberID))
	}

	// Committed offsets
	g.commits.each(func(topic string, part int32, oc *offsetCommit) {
		entries = append(entries, g.commitEntry(topic, part, *oc))
	})

	return entries
}

func (c *Cluster) savePIDsLog(fsys fs, dir string) error {
	// Close the live append handle before rewriting. No race here
	// (pids are single-threaded from run()), but prevents a stale
	// file descriptor.
	if c.pidsLogFile != nil {
		c.pidsLogFile.Close()
		c.pidsLogFile = nil
	}

	path := filepath.Join(dir, "pids.log")
	tmpPath := path + ".tmp"
	f, err := fsys.OpenFile(tmpPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()

	for _, pidinf := range c.pids.ids {
		// Write the latest state for each PID
		entry := pidLogEntry{
			Type:  "init",
			PID:   pidinf.id,
			Epoch: pidinf.epoch,
			TxID:  pidinf.txid,
		}
		if pidinf.txid != "" {
			entry.Timeout = pidinf.txTimeout
			entry.Commit = &pidinf.lastWasCommit
		}
		if _, err := appendLogEntry(f, entry, c.cfg.syncWrites); err != nil {
			return err
		}
	}
	return fsys.Rename(tmpPath, path)
}

func (c *Cluster) saveSeqWindows(fsys fs, dir string) error {
	var windows []persistSeqWindowEntry
	for pid, pidinf := range c.pids.ids {
		pidinf.windows.each(func(topic string, part int32, pw *pidwindow) {
			var entries [5]persistPidEntry
			for i, e := range pw.entries {
				entries[i] = persistPidEntry{
					FirstSeq: e.firstSeq,
					NextSeq:  e.nextSeq,
					Offset:   e.offset,
				}
			}
			windows = append(windows, persistSeqWindowEntry{
				PID:     pid,
				Topic:   topic,
				Part:    part,
				Entries: entries,
				Count:   pw.count,
				At:      pw.at,
				Epoch:   pw.epoch,
				Seen:    pw.seen,
				NextSeq: pw.nextSeq,
			})
		})
	}
	return writeJSONFile(fsys, filepath.Join(dir, "seq_windows.json"), persistSeqWindows{
		Version: currentPersistVersion,
		Windows: windows,
	})
}
