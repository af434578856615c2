package kfake

import (
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share group state: per-group membership and per-(group,topic,partition) record
// acquisition tracking. Share groups (KIP-932) provide at-least-once delivery
// where multiple consumers in the same group receive records from the same
// partitions concurrently. The broker tracks per-record state: which consumer
// acquired each record, the delivery count, and whether the record has been
// acknowledged (accepted/rejected/released).

type (
	shareGroups struct {
		c *Cluster

		gs map[string]*shareGroup

		// sweepTicker releases records whose acquisition lock expired.
		// One ticker for every share group: the interval is a broker
		// config, not a per-group one. It runs only while share groups
		// exist; sweepInterval is the interval it was built with.
		sweepTicker   *time.Ticker
		sweepInterval time.Duration

		sessions     map[shareSessionKey]*shareSession
		connWatch    map[*clientConn]struct{}
		disconnCh    chan *clientConn
		watchFetchCh chan *watchShareFetch
	}

	shareGroup struct {
		c    *Cluster
		name string

		groupEpoch int32
		members    map[string]*shareMember

		// Per-(topic,partition) record acquisition state.
		partitions tps[sharePartition]
	}

	shareMember struct {
		memberID   string
		clientID   string
		clientHost string
		rackID     *string

		memberEpoch         int32
		previousMemberEpoch int32
		subscribedTopics    []string

		// assignment: topicID -> partitions
		assignment map[uuid][]int32

		t    *time.Timer
		last time.Time
	}

	// shareRecordState tracks the per-record state in a share partition.
	shareRecordState int8

	// shareRecord tracks one record's acquisition state within a share partition.
	shareRecord struct {
		state         shareRecordState
		acquiredBy    string // memberID
		deliveryCount int32
		acquireTime   time.Time
	}

	// sharePartition tracks the SPSO and per-record state for one (group, topic, partition).
	//
	// records is a sparse map from offset to state. Entries are created on
	// first acquisition and deleted when SPSO advances past them. The map
	// may grow large if a consumer acquires many records without acking --
	// acceptable for a test broker.
	sharePartition struct {
		spso       int64 // Share-Partition Start Offset: first unfinalized offset
		acquireEnd int64 // one past highest tracked offset, for in-flight window
		records    map[int64]shareRecord

		// scanOffset tracks the next offset to scan for available records.
		// Advances past acquired/archived records to avoid re-scanning them.
		// Reset back toward SPSO when records are released (ack release,
		// sweep, member fencing).
		scanOffset int64
	}

	// shareSessionKey identifies a share session.
	shareSessionKey struct {
		group    string
		memberID string
		broker   int32
	}

	// shareSession tracks a share fetch session's epoch and the set of
	// partitions currently in the session. On epoch 0 (new session), the
	// request's Topics become the session's partitions. On epoch > 0
	// (incremental), the request's Topics are ADDED to the session and
	// ForgottenTopicsData are REMOVED (matching Kafka's ShareSession.update).
	//
	// partitions maps topicID -> partition -> requiresUpdate. The bool is
	// true when the partition must appear in the next incremental response
	// even if it has no data (new partition, or previous response had an
	// error). Matching Java's CachedSharePartition.requiresUpdateInResponse.
	shareSession struct {
		epoch      int32
		partitions map[uuid]map[int32]bool // topicID -> partition -> requiresUpdate
		cc         *clientConn             // owning connection, for disconnect cleanup
	}

	// watchShareFetch suspends a ShareFetch request until new records are
	// available or MaxWait expires. Registered on partData.shareWatch;
	// when pushBatch adds records, the watcher fires. The cleanup and
	// re-invocation happen in the cluster run() loop.
	watchShareFetch struct {
		creq    *clientReq
		session *shareSession // session at registration time; stale if overwritten
		in      []*partData
		ackTs   []ackTopic // piggybacked ack topics from the initial request
		cb      func()
		t       *time.Timer

		once    sync.Once
		cleaned bool
	}

	// tpKey identifies a (topicID, partition) pair for response dedup.
	tpKey struct {
		tid uuid
		p   int32
	}
)

const (
	shareRecordAvailable    shareRecordState = iota // can be acquired
	shareRecordAcquired                             // locked by a member
	shareRecordAcknowledged                         // accepted, pending SPSO advance
	shareRecordArchived                             // rejected, pending SPSO advance
)

// Ack types for ShareFetch/ShareAcknowledge acknowledgement batches.
// Matches Kafka's AcknowledgeType enum (KIP-932, KIP-1222).
const (
	shareAckGap     int8 = iota // skip (mapped to ARCHIVED)
	shareAckAccept              // accepted
	shareAckRelease             // release for redelivery
	shareAckReject              // rejected (mapped to ARCHIVED)
	shareAckRenew               // renew acquisition lock (v2+, KIP-1222)
)

const defShareMaxRecords = 500

// release sets the record to available (if under max delivery) or archived.
// Clears acquiredBy. Returns the modified record and true if the record
// became available. Resets sp.scanOffset if the offset is below the current
// scan position.
func (sr shareRecord) release(maxDelivery int32, sp *sharePartition, offset int64) (shareRecord, bool) {
	if sr.deliveryCount >= maxDelivery {
		sr.state = shareRecordArchived
		sr.acquiredBy = ""
		return sr, false
	}
	sr.state = shareRecordAvailable
	sr.acquiredBy = ""
	if offset < sp.scanOffset {
		sp.scanOffset = offset
	}
	return sr, true
}

// releaseAcquiredBy releases all records acquired by memberID on this
// partition. Returns true if any records became available. Advances SPSO
// after releasing.
func (sp *sharePartition) releaseAcquiredBy(memberID string, maxDelivery int32) bool {
	released := false
	for offset, sr := range sp.records {
		if sr.state == shareRecordAcquired && sr.acquiredBy == memberID {
			var ok bool
			sr, ok = sr.release(maxDelivery, sp, offset)
			sp.records[offset] = sr
			if ok {
				released = true
			}
		}
	}
	sp.advanceSPSO()
	return released
}

func (s *shareSession) bumpEpoch() {
	s.epoch++
	if s.epoch < 1 {
		s.epoch = 1
	}
}

func (w *watchShareFetch) fire() {
	w.once.Do(func() {
		go w.cb()
	})
}

func (w *watchShareFetch) cleanup() {
	w.cleaned = true
	for _, pd := range w.in {
		delete(pd.shareWatch, w)
	}
	w.t.Stop()
}

func (sgs *shareGroups) handleHeartbeat(creq *clientReq) kmsg.Response {
	req := creq.kreq.(*kmsg.ShareGroupHeartbeatRequest)
	errResp := func() *kmsg.ShareGroupHeartbeatResponse {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}

	// Group type exclusivity: if this group ID is already a consumer
	// group, reject the share group heartbeat (matching Kafka's
	// GroupCoordinatorService which prevents mixing group types).
	if _, isConsumer := sgs.c.groups.gs[req.GroupID]; isConsumer {
		return errResp()
	}

	// For non-join heartbeats (epoch != 0), the group must exist.
	// Java returns GROUP_ID_NOT_FOUND for heartbeats to unknown groups.
	if req.MemberEpoch != 0 && sgs.gs[req.GroupID] == nil {
		return errResp()
	}

	g := sgs.getOrCreate(req.GroupID)
	return g.handleHeartbeat(creq)
}

// get returns the share group for name, or nil if it doesn't exist.
func (sgs *shareGroups) get(name string) *shareGroup {
	return sgs.gs[name]
}

func (sgs *shareGroups) getOrCreate(name string) *shareGroup {
	if g := sgs.get(name); g != nil {
		return g
	}
	g := &shareGroup{
		c:          sgs.c,
		name:       name,
		members:    make(map[string]*shareMember),
		partitions: make(tps[sharePartition]),
	}
	sgs.gs[name] = g
	sgs.refreshSweepTicker()
	return g
}

// createSession creates a new share session (epoch 0). Returns the session,
// the share group, and an error code. On success the session is stored and
// a disconnect watcher is registered. Must only be called from run().
func (sgs *shareGroups) createSession(
	key shareSessionKey,
	req *kmsg.ShareFetchRequest,
	cc *clientConn,
) (*shareSession, *shareGroup, int16) {
	sg := sgs.getOrCreate(key.group)

	// Reject piggybacked acks before creating session
	// (matching Kafka: checks before maybeCreateSession).
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			if len(req.Topics[i].Partitions[j].AcknowledgementBatches) > 0 {
				return nil, nil, kerr.InvalidRequest.Code
			}
		}
	}

	// Remove old session before capacity check so re-creating
	// doesn't hit the limit (matching Kafka's cache.remove(key)
	// before maybeCreateSession).
	delete(sgs.sessions, key)
	if int32(len(sgs.sessions)) >= sgs.c.shareMaxSessions() {
		// TODO: use kerr.ShareSessionLimitReached.Code once franz-go
		// 1.21 (or whichever release adds it) is published and
		// pkg/kfake's go.mod is bumped.
		return nil, nil, int16(133) // SHARE_SESSION_LIMIT_REACHED
	}

	session := &shareSession{
		epoch:      0,
		partitions: make(map[uuid]map[int32]bool),
		cc:         cc,
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		ps := session.partitions[rt.TopicID]
		if ps == nil {
			ps = make(map[int32]bool)
			session.partitions[rt.TopicID] = ps
		}
		for j := range rt.Partitions {
			ps[rt.Partitions[j].Partition] = true
		}
	}
	sgs.sessions[key] = session

	// Watch the connection for disconnect cleanup
	// (matching Kafka's ConnectionDisconnectListener).
	if _, watched := sgs.connWatch[cc]; !watched {
		sgs.connWatch[cc] = struct{}{}
		go func() {
			select {
			case <-cc.done:
				select {
				case sgs.disconnCh <- cc:
				case <-sgs.c.die:
				}
			case <-sgs.c.die:
			}
		}()
	}

	return session, sg, 0
}

// updateSession validates and applies an incremental session update (epoch > 0).
// Returns the session and an error code. Must only be called from run().
func (sgs *shareGroups) updateSession(
	key shareSessionKey,
	epoch int32,
	topics []kmsg.ShareFetchRequestTopic,
	forgotten []kmsg.ShareFetchRequestForgottenTopicsData,
) (*shareSession, int16) {
	session := sgs.sessions[key]
	if session == nil {
		return nil, kerr.ShareSessionNotFound.Code
	}
	if epoch != session.epoch {
		return nil, kerr.InvalidShareSessionEpoch.Code
	}

	// Incremental: merge request Topics (ADD), remove
	// ForgottenTopicsData. New partitions get requiresUpdate=true
	// so they appear in the response even with no data (matching
	// Kafka's CachedSharePartition.requiresUpdateInResponse).
	for i := range topics {
		rt := &topics[i]
		ps := session.partitions[rt.TopicID]
		if ps == nil {
			ps = make(map[int32]bool)
			session.partitions[rt.TopicID] = ps
		}
		for j := range rt.Partitions {
			p := rt.Partitions[j].Partition
			if _, ok := ps[p]; !ok {
				ps[p] = true
			}
		}
	}
	for i := range forgotten {
		ft := &forgotten[i]
		ps := session.partitions[ft.TopicID]
		if ps == nil {
			continue
		}
		for _, p := range ft.Partitions {
			delete(ps, p)
		}
		if len(ps) == 0 {
			delete(session.partitions, ft.TopicID)
		}
	}

	return session, 0
}

// sweepTickerC returns the sweep ticker channel, or nil if no ticker is
// running. A nil channel never fires in a select.
func (sgs *shareGroups) sweepTickerC() <-chan time.Time {
	if sgs.sweepTicker != nil {
		return sgs.sweepTicker.C
	}
	return nil
}

// refreshSweepTicker starts, stops or reschedules the acquisition lock
// sweep. There is nothing to sweep with no share groups, and the interval
// comes from share.record.lock.sweep.interval.ms, which can be altered
// over the wire or restored from disk at any time. A non-positive interval
// turns sweeping off rather than panicking in time.NewTicker.
//
// Must be called from Cluster.run(), or from NewCluster before run starts.
func (sgs *shareGroups) refreshSweepTicker() {
	var want time.Duration
	if len(sgs.gs) > 0 {
		if ms := sgs.c.shareLockSweepIntervalMs(); ms > 0 {
			want = time.Duration(ms) * time.Millisecond
		}
	}
	if want == sgs.sweepInterval {
		return
	}
	sgs.stopSweepTicker()
	if want > 0 {
		sgs.sweepTicker = time.NewTicker(want)
		sgs.sweepInterval = want
	}
}

// stopSweepTicker stops the sweep ticker if one is running.
func (sgs *shareGroups) stopSweepTicker() {
	if sgs.sweepTicker != nil {
		sgs.sweepTicker.Stop()
		sgs.sweepTicker = nil
	}
	sgs.sweepInterval = 0
}

// stopTimers stops every timer the group owns. An unstopped timer keeps
// the group, and through it the cluster, alive in the runtime timer heap
// until it fires.
func (g *shareGroup) stopTimers() {
	for _, m := range g.members {
		if m.t != nil {
			m.t.Stop()
		}
	}
}

// sweepAllExpiredAcquisitions sweeps every share group. Called from the
// run loop when the sweep ticker fires.
func (sgs *shareGroups) sweepAllExpiredAcquisitions() {
	for _, g := range sgs.gs {
		g.sweepExpiredAcquisitions()
	}
}

// sweepExpiredAcquisitions releases records whose acquisition lock has
// expired. If a record has been delivered maxDeliveryCount times, it is
// archived instead of released.
func (g *shareGroup) sweepExpiredAcquisitions() {
	now := time.Now()
	lockDuration := time.Duration(g.c.shareRecordLockDurationMs()) * time.Millisecond
	maxDelivery := g.c.shareMaxDeliveryAttempts()
	released := false
	g.partitions.each(func(_ string, _ int32, sp *sharePartition) {
		for offset, sr := range sp.records {
			if sr.state != shareRecordAcquired {
				continue
			}
			if now.Sub(sr.acquireTime) < lockDuration {
				continue
			}
			var ok bool
			sr, ok = sr.release(maxDelivery, sp, offset)
			sp.records[offset] = sr
			if ok {
				released = true
			}
		}
		sp.advanceSPSO()
	})
	if released {
		g.fireAllShareWatchers()
	}
}

func (g *shareGroup) handleHeartbeat(creq *clientReq) kmsg.Response {
	req := creq.kreq.(*kmsg.ShareGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = g.c.shareHeartbeatIntervalMs()

	switch req.MemberEpoch {
	case 0:
		return g.handleJoin(creq, req, resp)
	case -1:
		return g.handleLeave(req, resp)
	default:
		return g.handleRegularHeartbeat(creq, req, resp)
	}
}

func (g *shareGroup) handleJoin(creq *clientReq, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) *kmsg.ShareGroupHeartbeatResponse {
	memberID := req.MemberID

	m := g.members[memberID]
	if m != nil {
		// Rejoin: update client info, conditionally rebalance if
		// subscriptions changed (matching Kafka's behavior where
		// groupEpoch only bumps on metadata/subscription changes).
		newSubs := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(newSubs)
		subsChanged := !slices.Equal(m.subscribedTopics, newSubs)
		m.subscribedTopics = newSubs
		m.clientID = creq.cid
		m.clientHost = creq.cc.conn.RemoteAddr().String()
		if req.RackID != nil {
			m.rackID = req.RackID
		}
		m.last = time.Now()
		if subsChanged {
			g.groupEpoch++
			g.recomputeAssignments()
		}
	} else {
		// New join: check capacity, create member.
		if int32(len(g.members)) >= g.c.shareMaxGroupSize() {
			resp.ErrorCode = kerr.GroupMaxSizeReached.Code
			return resp
		}
		m = &shareMember{
			memberID:   memberID,
			clientID:   creq.cid,
			clientHost: creq.cc.conn.RemoteAddr().String(),
			rackID:     req.RackID,
			assignment: make(map[uuid][]int32),
			last:       time.Now(),
		}
		if req.SubscribedTopicNames != nil {
			m.subscribedTopics = slices.Clone(req.SubscribedTopicNames)
			slices.Sort(m.subscribedTopics)
		}
		g.members[memberID] = m
		g.groupEpoch++
		g.recomputeAssignments()
	}

	g.resetSessionTimeout(m)
	g.reconcileMember(m)
	resp.MemberID = &memberID
	resp.MemberEpoch = m.memberEpoch
	resp.Assignment = g.makeAssignment(m)
	return resp
}

func (g *shareGroup) handleLeave(req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) *kmsg.ShareGroupHeartbeatResponse {
	m := g.members[req.MemberID]
	if m == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	if m.t != nil {
		m.t.Stop()
	}
	delete(g.members, req.MemberID)
	g.groupEpoch++
	if len(g.members) > 0 {
		g.recomputeAssignments()
	}

	// Release any records acquired by this member.
	g.dropSessionsForMember(req.MemberID)
	g.releaseRecordsForMember(req.MemberID)

	g.maybeQuit()

	resp.MemberID = &req.MemberID
	resp.MemberEpoch = -1
	return resp
}

func (g *shareGroup) handleRegularHeartbeat(creq *clientReq, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) *kmsg.ShareGroupHeartbeatResponse {
	m := g.members[req.MemberID]
	if m == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}

	// Epoch validation matching Kafka's throwIfShareGroupMemberEpochIsInvalid
	// (GroupMetadataManager.java:1605-1625): accept the current epoch or the
	// previous epoch (in case the response that bumped the epoch was lost).
	if req.MemberEpoch != m.memberEpoch && req.MemberEpoch != m.previousMemberEpoch {
		resp.ErrorCode = kerr.FencedMemberEpoch.Code
		return resp
	}

	m.last = time.Now()
	m.clientID = creq.cid
	m.clientHost = creq.cc.conn.RemoteAddr().String()
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	g.resetSessionTimeout(m)

	// Check if subscription changed.
	if req.SubscribedTopicNames != nil {
		sorted := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(sorted)
		if !slices.Equal(m.subscribedTopics, sorted) {
			m.subscribedTopics = sorted
			g.groupEpoch++
			g.recomputeAssignments()
		}
	}

	// Reconcile: bump this member's epoch to the group epoch if behind.
	// Like Kafka's ShareGroupAssignmentBuilder.build(), the epoch is only
	// advanced during the member's own heartbeat, not when other members
	// join/leave.
	epochBefore := m.memberEpoch
	g.reconcileMember(m)

	resp.MemberID = &req.MemberID
	resp.MemberEpoch = m.memberEpoch

	// Like Kafka, we send the assignment only to a full request (one
	// carrying SubscribedTopicNames) or when this heartbeat changed it;
	// a client that misses one has to ask with a full request.
	if req.SubscribedTopicNames != nil || m.memberEpoch != epochBefore {
		resp.Assignment = g.makeAssignment(m)
	}
	return resp
}
