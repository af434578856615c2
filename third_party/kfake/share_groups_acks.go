package kfake

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type (
	// ackBatch is a common representation of an acknowledgement batch,
	// abstracting over the different kmsg request types (ShareFetch vs
	// ShareAcknowledge have identical fields but different Go types).
	ackBatch struct {
		first, last int64
		ackTypes    []int8
	}

	// ackTopic groups ack batches by topic, abstracting over ShareFetch and
	// ShareAcknowledge request types.
	ackTopic struct {
		topicID    uuid
		partitions []ackPartition
	}

	ackPartition struct {
		partition int32
		batches   []ackBatch
	}
)

// ackTopicsFromFetch extracts piggybacked ack topics from a ShareFetch
// request, including only partitions with acknowledgement batches.
func ackTopicsFromFetch(topics []kmsg.ShareFetchRequestTopic) []ackTopic {
	var out []ackTopic
	for i := range topics {
		rt := &topics[i]
		at := ackTopic{topicID: rt.TopicID}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if len(rp.AcknowledgementBatches) == 0 {
				continue
			}
			ap := ackPartition{partition: rp.Partition}
			for _, b := range rp.AcknowledgementBatches {
				ap.batches = append(ap.batches, ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
			}
			at.partitions = append(at.partitions, ap)
		}
		if len(at.partitions) > 0 {
			out = append(out, at)
		}
	}
	return out
}

// ackTopicsFromAcknowledge extracts ack topics from a ShareAcknowledge request.
func ackTopicsFromAcknowledge(topics []kmsg.ShareAcknowledgeRequestTopic) []ackTopic {
	var out []ackTopic
	for i := range topics {
		rt := &topics[i]
		at := ackTopic{topicID: rt.TopicID}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if len(rp.AcknowledgementBatches) == 0 {
				continue
			}
			ap := ackPartition{partition: rp.Partition}
			for _, b := range rp.AcknowledgementBatches {
				ap.batches = append(ap.batches, ackBatch{b.FirstOffset, b.LastOffset, b.AcknowledgeTypes})
			}
			at.partitions = append(at.partitions, ap)
		}
		if len(at.partitions) > 0 {
			out = append(out, at)
		}
	}
	return out
}

// validateOneAckBatch validates a single acknowledgement batch. prevEnd
// tracks the previous batch's last offset (pass -1 initially). Updated on
// success.
func validateOneAckBatch(first, last int64, ackTypes []int8, prevEnd *int64, maxAckType int8) int16 {
	if first > last {
		return kerr.InvalidRequest.Code
	}
	if first <= *prevEnd {
		return kerr.InvalidRequest.Code
	}
	if len(ackTypes) == 0 {
		return kerr.InvalidRequest.Code
	}
	if len(ackTypes) > 1 && int64(len(ackTypes)) != last-first+1 {
		return kerr.InvalidRequest.Code
	}
	for _, at := range ackTypes {
		if at < 0 || at > maxAckType {
			return kerr.InvalidRequest.Code
		}
	}
	*prevEnd = last
	return 0
}

// processShareAcks validates and applies acknowledgement batches,
// calling onPartition for each acked partition with its result error
// code (0 on success). If the receiving broker is not the partition's
// current leader, onNotLeader is called instead of onPartition so the
// caller can populate a CurrentLeader hint in its response; if
// onNotLeader is nil, onPartition receives NotLeaderForPartition
// without a hint. Returns partitions with successful acks (for
// watcher firing).
//
// Real Kafka rejects ShareAcknowledge for a partition the broker
// does not lead; clients rely on that per-partition error (plus the
// CurrentLeader hint on standalone ShareAcknowledge responses) to
// migrate cursors promptly. Without enforcing this in kfake, tests
// miss the ack-side leader-move path entirely.
//
// Must be called from run().
func (g *shareGroup) processShareAcks(
	creq *clientReq,
	memberID string,
	topics []ackTopic,
	maxAckType int8,
	onPartition func(tid uuid, p int32, ec int16),
	onNotLeader func(tid uuid, p int32, pd *partData),
) (toFire []*partData) {
	maxDelivery := g.c.shareMaxDeliveryAttempts()
	for _, at := range topics {
		topicName := g.c.data.id2t[at.topicID]
		if topicName == "" {
			for _, ap := range at.partitions {
				onPartition(at.topicID, ap.partition, kerr.UnknownTopicID.Code)
			}
			continue
		}
		tk := faultKey{topic: topicName, topicID: at.topicID}
		if e := g.c.deny(creq, topicName, kmsg.ACLResourceTypeTopic, kmsg.ACLOperationRead, tk); e != nil {
			for _, ap := range at.partitions {
				onPartition(at.topicID, ap.partition, e.Code)
			}
			continue
		}
		for _, ap := range at.partitions {
			if e := creq.faults.check(tk.part(ap.partition)); e != nil {
				onPartition(at.topicID, ap.partition, e.Code)
				continue
			}
			errCode := int16(0)
			prevEnd := int64(-1)
			for _, batch := range ap.batches {
				if ec := validateOneAckBatch(batch.first, batch.last, batch.ackTypes, &prevEnd, maxAckType); ec != 0 {
					errCode = ec
					break
				}
			}
			if errCode != 0 {
				onPartition(at.topicID, ap.partition, errCode)
				continue
			}
			pd, ok := g.c.data.tps.getp(topicName, ap.partition)
			if !ok {
				onPartition(at.topicID, ap.partition, kerr.UnknownTopicOrPartition.Code)
				continue
			}
			if pd.leader.node != creq.cc.b.node {
				if onNotLeader != nil {
					onNotLeader(at.topicID, ap.partition, pd)
				} else {
					onPartition(at.topicID, ap.partition, kerr.NotLeaderForPartition.Code)
				}
				continue
			}
			shp := g.getSharePartition(topicName, ap.partition, pd)
			if ec := shp.validateAndProcessAcks(memberID, ap.batches, maxDelivery); ec != 0 {
				onPartition(at.topicID, ap.partition, ec)
				continue
			}
			onPartition(at.topicID, ap.partition, 0)
			toFire = append(toFire, pd)
		}
	}
	return toFire
}

// acquireRecords acquires available records from [scanOffset, hwm) for the
// given member, up to maxRecords. Records that have hit maxDeliveryCount are
// archived instead of acquired. Returns the list of acquired offset ranges
// with delivery counts.
//
// pd is used for compaction-aware gap detection: offsets that fall between
// batches (compacted away) are skipped rather than tracked as phantom records.
//
// When readCommitted is true, offsets belonging to aborted transactions are
// archived immediately (matching Java's SharePartition.acquire filtering).
func (sp *sharePartition) acquireRecords(
	pd *partData,
	hwm int64,
	maxRecords int32,
	memberID string,
	maxDeliveryCount int32,
	maxRecordLocks int32,
	readCommitted bool,
) []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
	var (
		now      = time.Now()
		count    int32
		acquired []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	)

	if sp.scanOffset < sp.spso {
		sp.scanOffset = sp.spso
	}

	// In-flight limit (matching Kafka's lastOffsetAndMaxRecordsToAcquire).
	// The in-flight window is [spso, acquireEnd). When at capacity, records
	// within the existing window can still be re-acquired (e.g., released
	// records near SPSO) because they don't extend the window. Only
	// acquisition of records BEYOND acquireEnd is blocked. Kafka handles
	// this with: if maxRecordsToAcquire <= 0 && fetchOffset <= endOffset,
	// recalculate as min(maxFetch, endOffset - fetchOffset + 1).
	acquireLimit := hwm // default: scan up to HWM
	if maxRecordLocks > 0 && sp.acquireEnd > sp.spso {
		windowSize := int32(sp.acquireEnd - sp.spso)
		if windowSize >= maxRecordLocks {
			// At capacity: only allow re-acquisition within the
			// existing window (up to acquireEnd), not beyond.
			if sp.scanOffset >= sp.acquireEnd {
				return nil
			}
			acquireLimit = sp.acquireEnd
		}
	}
	if acquireLimit > hwm {
		acquireLimit = hwm
	}

	// Find starting batch position for gap detection.
	curSeg, curMeta, hasBatch, atEnd := pd.searchOffset(sp.scanOffset)
	if atEnd {
		hasBatch = false
	}

	lastScanned := sp.scanOffset

	// Walk offsets from scanOffset to HWM looking for available records.
	for offset := sp.scanOffset; offset < acquireLimit && count < maxRecords; offset++ {
		// In-flight limit per iteration: stop if extending beyond acquireEnd
		// while at capacity (records within the window are always ok).
		// This check MUST come before advancing lastScanned, otherwise
		// scanOffset jumps past this offset without creating a record
		// for it. Later, advanceSPSO would skip the nil entry as a
		// "compacted gap", silently losing the record.
		if maxRecordLocks > 0 && offset >= sp.acquireEnd && sp.acquireEnd > sp.spso && sp.acquireEnd-sp.spso >= int64(maxRecordLocks) {
			break
		}
		lastScanned = offset + 1

		// Gap detection: skip offsets between batches (compacted away).
		if hasBatch {
			curBatch := &pd.segments[curSeg].index[curMeta]
			if offset > curBatch.firstOffset+int64(curBatch.lastOffsetDelta) {
				// Past current batch, advance to next.
				curMeta++
				for curMeta >= len(pd.segments[curSeg].index) {
					curSeg++
					curMeta = 0
					if curSeg >= len(pd.segments) {
						hasBatch = false
						break
					}
				}
				if hasBatch {
					curBatch = &pd.segments[curSeg].index[curMeta]
				}
			}
			if hasBatch && offset < curBatch.firstOffset {
				// Offset is in a gap between batches. Jump past it.
				lastScanned = curBatch.firstOffset
				offset = curBatch.firstOffset - 1 // -1 because for loop increments
				continue
			}
		}

		// READ_COMMITTED: check if this offset belongs to an aborted
		// transaction. If so, archive it immediately (matching Java's
		// SharePartition.maybeFilterAbortedTransactionalAcquiredRecords).
		// We piggyback on the batch cursor to get the producerID.
		if readCommitted && hasBatch {
			curBatch := &pd.segments[curSeg].index[curMeta]
			if offset >= curBatch.firstOffset && offset <= curBatch.firstOffset+int64(curBatch.lastOffsetDelta) {
				if curBatch.inTx && pd.isOffsetAborted(curBatch.firstOffset, curBatch.producerID) {
					sr := sp.records[offset]
					sr.state = shareRecordArchived
					sr.acquiredBy = ""
					sp.records[offset] = sr
					continue
				}
			}
		}

		sr, exists := sp.records[offset]
		if !exists {
			// No state yet -- new record, available.
			sr = shareRecord{state: shareRecordAvailable}
		}
		if sr.state != shareRecordAvailable {
			continue
		}

		// If this record has been delivered too many times, archive it
		// rather than delivering again.
		if sr.deliveryCount >= maxDeliveryCount {
			sr.state = shareRecordArchived
			sr.acquiredBy = ""
			sp.records[offset] = sr
			continue
		}

		// Acquire.
		sr.state = shareRecordAcquired
		sr.acquiredBy = memberID
		sr.deliveryCount++
		sr.acquireTime = now
		sp.records[offset] = sr
		count++
		if offset+1 > sp.acquireEnd {
			sp.acquireEnd = offset + 1
		}

		// Try to extend the last AcquiredRecord range.
		if n := len(acquired); n > 0 {
			last := &acquired[n-1]
			if last.LastOffset == offset-1 && int32(last.DeliveryCount) == sr.deliveryCount {
				last.LastOffset = offset
				continue
			}
		}
		ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
		ar.FirstOffset = offset
		ar.LastOffset = offset
		ar.DeliveryCount = int16(sr.deliveryCount)
		acquired = append(acquired, ar)
	}

	// Always advance scanOffset to reflect how far we scanned,
	// even when nothing was acquired. This lets advanceSPSO
	// detect compacted gaps (nil entries below scanOffset).
	if lastScanned > sp.scanOffset {
		sp.scanOffset = lastScanned
	}

	// After acquiring, advance SPSO in case we archived some records
	// at the front.
	sp.advanceSPSO()

	return acquired
}

// validateAcks checks that all offsets in [first, last] are valid for acking
// by memberID without applying any state changes. Returns 0 if valid, error
// code otherwise. Used for atomic validate-then-apply across multiple batches:
// validate all, then apply all, rollback everything on any error.
//
// Error codes:
//   - INVALID_REQUEST: batch extends beyond tracked/cached records
//   - INVALID_RECORD_STATE: record exists but wrong state or wrong owner
func (sp *sharePartition) validateAcks(memberID string, first, last int64) int16 {
	// Check if the batch extends beyond tracked records.
	if sp.acquireEnd > sp.spso {
		if first >= sp.acquireEnd || last >= sp.acquireEnd {
			return kerr.InvalidRequest.Code
		}
	} else if last >= sp.spso {
		return kerr.InvalidRequest.Code
	}

	for offset := first; offset <= last; offset++ {
		if offset < sp.spso {
			continue
		}
		sr, ok := sp.records[offset]
		if !ok {
			return kerr.InvalidRecordState.Code
		}
		if sr.state != shareRecordAcquired {
			return kerr.InvalidRecordState.Code
		}
		if sr.acquiredBy != memberID {
			return kerr.InvalidRecordState.Code
		}
	}
	return 0
}

// processAcks applies ack types to the offset range [first, last].
//
// AcknowledgeTypes can be:
//   - empty or single element: uniform type for the whole range
//   - per-offset: one element per offset in the range
//
// Types: 0=Gap (skip), 1=Accept, 2=Release, 3=Reject, 4=Renew.
// Offsets below SPSO are silently skipped (already finalized).
//
// maxDeliveryCount is checked on RELEASE: if the record has already been
// delivered maxDeliveryCount times, it is archived instead of released.
//
// Must be called only after validateAcks succeeds for all batches in the
// request. processAcks assumes records are in valid state (ACQUIRED by
// memberID) and skips any that aren't (defensive, shouldn't happen after
// validation).
func (sp *sharePartition) processAcks(memberID string, first, last int64, ackTypes []int8, maxDeliveryCount int32) {
	perOffset := len(ackTypes) > 1
	uniformType := int8(1) // default: accept
	if len(ackTypes) == 1 {
		uniformType = ackTypes[0]
	}
	now := time.Now()
	for offset := first; offset <= last; offset++ {
		if offset < sp.spso {
			continue // already finalized
		}
		sr, ok := sp.records[offset]
		if !ok {
			continue // compacted or never tracked
		}
		if sr.state != shareRecordAcquired {
			continue // already released/archived/acknowledged
		}
		if sr.acquiredBy != memberID {
			continue // acquired by someone else (e.g., after sweep)
		}
		ackType := uniformType
		if perOffset {
			idx := int(offset - first)
			if idx < len(ackTypes) {
				ackType = ackTypes[idx]
			}
		}
		switch ackType {
		case shareAckGap:
			sr.state = shareRecordArchived
			sr.acquiredBy = ""
		case shareAckAccept:
			sr.state = shareRecordAcknowledged
			sr.acquiredBy = ""
		case shareAckRelease:
			sr, _ = sr.release(maxDeliveryCount, sp, offset)
		case shareAckReject:
			sr.state = shareRecordArchived
			sr.acquiredBy = ""
		case shareAckRenew:
			sr.acquireTime = now
		}
		sp.records[offset] = sr
	}
}

// validateAndProcessAcks atomically validates then applies ack batches
// for one partition. Returns 0 on success, error code on failure.
// Validates all batches first, then applies all -- any validation failure
// rejects the entire request.
func (sp *sharePartition) validateAndProcessAcks(memberID string, batches []ackBatch, maxDelivery int32) int16 {
	for i := range batches {
		if ec := sp.validateAcks(memberID, batches[i].first, batches[i].last); ec != 0 {
			return ec
		}
	}
	for i := range batches {
		sp.processAcks(memberID, batches[i].first, batches[i].last, batches[i].ackTypes, maxDelivery)
	}
	sp.advanceSPSO()
	return 0
}

// advanceSPSO advances the SPSO past contiguous acknowledged/archived
// records, cleaning up their state entries. Also skips compacted gaps:
// if records[spso] is nil but we've already scanned past that offset
// (spso < scanOffset), the nil means the offset was compacted away.
func (sp *sharePartition) advanceSPSO() {
	for {
		sr, ok := sp.records[sp.spso]
		if !ok {
			// If we've scanned past this offset and there's no
			// record, it's a compacted gap - skip it.
			if sp.spso < sp.scanOffset {
				sp.spso++
				continue
			}
			break
		}
		if sr.state != shareRecordAcknowledged && sr.state != shareRecordArchived {
			break
		}
		delete(sp.records, sp.spso)
		sp.spso++
	}
}

// cleanupSessionsForConn removes all share sessions owned by the given
// connection and releases their acquired records. When a TCP connection
// drops, all sessions on that connection are removed and acquired records
// are released. Must only be called from run().
func (sgs *shareGroups) cleanupSessionsForConn(cc *clientConn) {
	for key, session := range sgs.sessions {
		if session.cc != cc {
			continue
		}
		delete(sgs.sessions, key)
		sg := sgs.gs[key.group]
		if sg == nil {
			continue
		}
		released := sg.releaseRecordsForSession(key.memberID, session)
		if released {
			sg.fireAllShareWatchers()
		}
	}
}

// fireAll wakes pending ShareFetch watchers on the given partitions.
// Must only be called from run().
func fireAll(pds []*partData) {
	for _, pd := range pds {
		pd.fireShareWatchers()
	}
}

// fireShareWatchers wakes any pending ShareFetch watchers on this
// partition. Called after acks that may have released records.
// Must only be called from run().
func (pd *partData) fireShareWatchers() {
	for w := range pd.shareWatch {
		w.fire()
	}
}

// fireAllShareWatchers wakes share watchers on all partitions tracked by
// this share group. Called after a sweep or a fence releases records.
// Must only be called from run().
func (g *shareGroup) fireAllShareWatchers() {
	for topic, ps := range g.partitions {
		for p := range ps {
			if pd, ok := g.c.data.tps.getp(topic, p); ok {
				pd.fireShareWatchers()
			}
		}
	}
}
