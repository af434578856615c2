package kfake

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// recomputeAssignments implements a simple sticky assignor for share groups:
// existing valid assignments are preserved and only the minimum changes are
// made to achieve balance.
//
// Algorithm (per topic):
//  1. Retain assignments for subscribed topics, revoke unsubscribed
//  2. Revoke from overfilled members (too many partitions)
//  3. Revoke overshared partitions (too many members per partition)
//  4. Assign remaining capacity to underfilled members
//
// This updates the assignment but does NOT bump member epochs. Each member's
// epoch is only bumped when it heartbeats and receives the updated assignment
// (via reconcileMember).
func (g *shareGroup) recomputeAssignments() {
	memberIDs := slices.Sorted(maps.Keys(g.members))

	// Build topic->subscribers index.
	topicSubs := make(map[string][]string)
	for _, id := range memberIDs {
		for _, topic := range g.members[id].subscribedTopics {
			topicSubs[topic] = append(topicSubs[topic], id)
		}
	}

	// Reverse lookup: topicID -> topicName.
	topicForID := make(map[uuid]string)
	for topic := range g.c.data.tps {
		topicForID[g.c.data.t2id[topic]] = topic
	}

	type partKey struct {
		topic string
		part  int32
	}

	// Phase 1: Retain valid assignments, revoke invalid ones.
	partMembers := make(map[partKey]map[string]struct{})

	for _, id := range memberIDs {
		m := g.members[id]
		newAssign := make(map[uuid][]int32)
		for tid, parts := range m.assignment {
			topic := topicForID[tid]
			if topic == "" {
				continue // topic deleted
			}
			_, nparts, _ := g.c.topicInfo(topic)
			if _, ok := slices.BinarySearch(m.subscribedTopics, topic); !ok {
				continue // unsubscribed
			}
			var kept []int32
			for _, p := range parts {
				if p >= nparts {
					continue // partition removed
				}
				pk := partKey{topic, p}
				if partMembers[pk] == nil {
					partMembers[pk] = make(map[string]struct{})
				}
				partMembers[pk][id] = struct{}{}
				kept = append(kept, p)
			}
			if len(kept) > 0 {
				newAssign[tid] = kept
			}
		}
		m.assignment = newAssign
	}

	// Phase 2: Per-topic rebalancing.
	for topic, subs := range topicSubs {
		tid, nparts, ok := g.c.topicInfo(topic)
		if !ok || nparts == 0 {
			continue
		}
		nSubs := len(subs)
		nParts := int(nparts)
		desiredSharing := (nSubs + nParts - 1) / nParts
		totalSlots := desiredSharing * nParts

		// Compute per-member desired count for this topic (matching
		// Java's cumulative ceiling formula for fair distribution).
		desiredCount := make(map[string]int, nSubs)
		cum := 0
		for i, id := range subs {
			target := ((i+1)*totalSlots + nSubs - 1) / nSubs
			desiredCount[id] = target - cum
			cum = target
		}

		// Current count per member for this topic.
		memberTopicCount := make(map[string]int, nSubs)
		for _, id := range subs {
			memberTopicCount[id] = len(g.members[id].assignment[tid])
		}

		// Phase 2a: Revoke from overfilled members.
		for _, id := range subs {
			m := g.members[id]
			parts := m.assignment[tid]
			desired := desiredCount[id]
			if len(parts) <= desired {
				continue
			}
			removed := parts[desired:]
			if desired > 0 {
				m.assignment[tid] = parts[:desired]
			} else {
				delete(m.assignment, tid)
			}
			for _, p := range removed {
				pk := partKey{topic, p}
				delete(partMembers[pk], id)
			}
			memberTopicCount[id] = desired
		}

		// Phase 2b: Revoke overshared partitions. Prefer removing
		// from the most-overfilled members for better balance.
		type candidate struct {
			id    string
			extra int // current - desired
		}
		cands := make([]candidate, 0, nSubs)
		for p := int32(0); p < nparts; p++ {
			pk := partKey{topic, p}
			members := partMembers[pk]
			excess := len(members) - desiredSharing
			if excess <= 0 {
				continue
			}
			// Collect and sort: most overfilled first, then by ID for determinism.
			cands = cands[:0]
			for id := range members {
				cands = append(cands, candidate{id, memberTopicCount[id] - desiredCount[id]})
			}
			slices.SortFunc(cands, func(a, b candidate) int {
				if a.extra != b.extra {
					return b.extra - a.extra // descending by overfill
				}
				return strings.Compare(a.id, b.id)
			})
			for _, c := range cands {
				if excess <= 0 {
					break
				}
				delete(members, c.id)
				m := g.members[c.id]
				m.assignment[tid] = slices.DeleteFunc(m.assignment[tid], func(v int32) bool { return v == p })
				if len(m.assignment[tid]) == 0 {
					delete(m.assignment, tid)
				}
				memberTopicCount[c.id]--
				excess--
			}
		}

		// Phase 2c: Assign remaining capacity to underfilled members.
		// Build a list of members needing more partitions.
		type unfilled struct {
			id      string
			desired int
		}
		var uf []unfilled
		for _, id := range subs {
			if memberTopicCount[id] < desiredCount[id] {
				uf = append(uf, unfilled{id, desiredCount[id]})
			}
		}
		if len(uf) == 0 {
			continue
		}

		uidx := 0
		for p := int32(0); p < nparts && len(uf) > 0; p++ {
			pk := partKey{topic, p}
			members := partMembers[pk]
			if members == nil {
				members = make(map[string]struct{})
				partMembers[pk] = members
			}
			for len(members) < desiredSharing && len(uf) > 0 {
				start := uidx
				found := false
				for {
					u := &uf[uidx%len(uf)]
					next := (uidx + 1) % len(uf)
					if _, already := members[u.id]; !already {
						members[u.id] = struct{}{}
						m := g.members[u.id]
						m.assignment[tid] = append(m.assignment[tid], p)
						memberTopicCount[u.id]++
						if memberTopicCount[u.id] >= u.desired {
							i := uidx % len(uf)
							uf = slices.Delete(uf, i, i+1)
							if len(uf) > 0 {
								uidx = i % len(uf)
							}
						} else {
							uidx = next
						}
						found = true
						break
					}
					uidx = next
					if uidx == start {
						break // all candidates already assigned
					}
				}
				if !found {
					break
				}
			}
		}
	}

	// Sort partition lists for deterministic output.
	for _, m := range g.members {
		for tid := range m.assignment {
			slices.Sort(m.assignment[tid])
		}
	}
}

// reconcileMember bumps the member's epoch to the current group epoch if
// it is behind, mirroring Kafka's ShareGroupAssignmentBuilder.build()
// which only advances a member's epoch during that member's own heartbeat.
func (g *shareGroup) reconcileMember(m *shareMember) {
	if m.memberEpoch != g.groupEpoch {
		m.previousMemberEpoch = m.memberEpoch
		m.memberEpoch = g.groupEpoch
	}
}

func (*shareGroup) makeAssignment(m *shareMember) *kmsg.ShareGroupHeartbeatResponseAssignment {
	a := new(kmsg.ShareGroupHeartbeatResponseAssignment)
	for tid, parts := range m.assignment {
		tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		tp.TopicID = tid
		tp.Partitions = parts
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

func (g *shareGroup) resetSessionTimeout(m *shareMember) {
	if m.t != nil {
		m.t.Stop()
	}
	timeout := time.Duration(g.c.shareSessionTimeoutMs()) * time.Millisecond
	m.last = time.Now()
	m.t = g.c.afterFuncOnLoop(timeout, func() {
		if g.c.shareGroups.gs[g.name] != g {
			return
		}
		// A timer that already fired cannot be retracted: the
		// member may have heartbeated since, or left and
		// rejoined under the same ID.
		if g.members[m.memberID] != m || time.Since(m.last) < timeout {
			return
		}
		g.fenceMember(m.memberID)
	})
}

func (g *shareGroup) fenceMember(memberID string) {
	m := g.members[memberID]
	if m == nil {
		return
	}
	if m.t != nil {
		m.t.Stop()
	}
	delete(g.members, memberID)

	g.dropSessionsForMember(memberID)
	g.releaseRecordsForMember(memberID)
	if len(g.members) > 0 {
		g.groupEpoch++
		g.recomputeAssignments()
	}
	g.maybeQuit()
}

// maybeQuit drops the group from the cluster if it is truly empty: no
// members and no partition state.
func (g *shareGroup) maybeQuit() {
	if len(g.members) > 0 || len(g.partitions) > 0 {
		return
	}
	delete(g.c.shareGroups.gs, g.name)
	g.c.shareGroups.refreshSweepTicker()
}

// kill drops the group from the cluster, with its partition state and any
// share session still keyed by its name. The group must have no members.
func (g *shareGroup) kill() {
	sgs := &g.c.shareGroups
	for key := range sgs.sessions {
		if key.group == g.name {
			delete(sgs.sessions, key)
		}
	}
	delete(sgs.gs, g.name)
	sgs.refreshSweepTicker()
}

// dropSessionsForMember removes every share session the member holds, on
// any broker. This must happen BEFORE the member's records are released:
// a parked ShareFetch only re-checks that its session is still the one in
// the map, not that the member is still in the group, so a session left
// behind lets a departed member re-acquire the records we just released
// and the surviving members see none of them until the lock expires.
func (g *shareGroup) dropSessionsForMember(memberID string) {
	sgs := &g.c.shareGroups
	for key := range sgs.sessions {
		if key.group == g.name && key.memberID == memberID {
			delete(sgs.sessions, key)
		}
	}
}

// releaseRecordsForMember releases all records acquired by the given member
// across all partitions. If a record has hit max delivery count, it is
// archived instead. If any records were released to AVAILABLE, we fire share
// watchers for waiting consumers.
func (g *shareGroup) releaseRecordsForMember(memberID string) {
	maxDelivery := g.c.shareMaxDeliveryAttempts()
	released := false
	g.partitions.each(func(_ string, _ int32, sp *sharePartition) {
		if sp.releaseAcquiredBy(memberID, maxDelivery) {
			released = true
		}
	})
	if released {
		g.fireAllShareWatchers()
	}
}

// releaseRecordsForSession releases records acquired by memberID only for
// partitions tracked by the given session. This is used during session
// close (ShareAcknowledge/ShareFetch epoch=-1) to avoid releasing records
// from other sessions on different brokers.
func (g *shareGroup) releaseRecordsForSession(memberID string, session *shareSession) bool {
	maxDelivery := g.c.shareMaxDeliveryAttempts()
	released := false
	for topicID, parts := range session.partitions {
		topicName := g.c.data.id2t[topicID]
		if topicName == "" {
			continue
		}
		for partition := range parts {
			sp, ok := g.partitions.getp(topicName, partition)
			if !ok {
				continue
			}
			if sp.releaseAcquiredBy(memberID, maxDelivery) {
				released = true
			}
		}
	}
	return released
}

// getSharePartition returns the share partition state, initializing it if needed.
func (g *shareGroup) getSharePartition(topic string, partition int32, pd *partData) *sharePartition {
	sp, ok := g.partitions.getp(topic, partition)
	if ok {
		return sp
	}
	// Initialize SPSO based on group config.
	spso := pd.highWatermark // default: latest
	if g.c.groupConfig(g.name, "share.auto.offset.reset") == "earliest" {
		spso = pd.logStartOffset
	}
	sp = g.partitions.mkp(topic, partition, func() *sharePartition {
		return &sharePartition{
			spso:       spso,
			scanOffset: spso,
			acquireEnd: spso,
			records:    make(map[int64]shareRecord),
		}
	})
	return sp
}
