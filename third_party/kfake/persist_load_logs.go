package kfake

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (c *Cluster) loadPIDsLog(fsys fs, dir string) error {
	raw, err := fsys.ReadFile(filepath.Join(dir, "pids.log"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	c.pidsLogSize = int64(len(raw))

	entries, validBytes := readEntries(raw)
	if validBytes < len(raw) {
		c.cfg.logger.Logf(LogLevelWarn, "pids.log: discarding %d corrupt trailing bytes", len(raw)-validBytes)
	}
	for _, e := range entries {
		var entry pidLogEntry
		if err := json.Unmarshal(e.data, &entry); err != nil {
			c.cfg.logger.Logf(LogLevelWarn, "pids.log: skipping corrupt entry: %v", err)
			continue
		}
		switch entry.Type {
		case "init":
			pidinf := &pidinfo{
				pids:       &c.pids,
				id:         entry.PID,
				epoch:      entry.Epoch,
				txid:       entry.TxID,
				txTimeout:  entry.Timeout,
				lastActive: time.Now(),
			}
			if entry.Commit != nil {
				pidinf.lastWasCommit = *entry.Commit
			}
			c.pids.ids[entry.PID] = pidinf
			if entry.TxID != "" {
				c.pids.byTxid[entry.TxID] = pidinf
			}
		case "endtx":
			pidinf, ok := c.pids.ids[entry.PID]
			if ok {
				pidinf.epoch = entry.Epoch
				pidinf.inTx = false
				if entry.Commit != nil {
					pidinf.lastWasCommit = *entry.Commit
				}
			}
		case "timeout":
			pidinf, ok := c.pids.ids[entry.PID]
			if ok {
				pidinf.epoch = entry.Epoch
				pidinf.inTx = false
			}
		}
	}
	return nil
}

func (c *Cluster) loadGroupsLog(fsys fs, dir string) error {
	raw, err := fsys.ReadFile(filepath.Join(dir, "groups.log"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	c.groupsLogSize = int64(len(raw))

	entries, validBytes := readEntries(raw)
	if validBytes < len(raw) {
		c.cfg.logger.Logf(LogLevelWarn, "groups.log: discarding %d corrupt trailing bytes", len(raw)-validBytes)
	}
	r := replayGroupsLog(entries)

	// Initialize groups from replayed state
	for name, data := range r.metas {
		var meta groupLogEntry
		json.Unmarshal(data, &meta)
		g := c.groups.newGroup(name)
		switch meta.Type {
		case "meta848":
			g.typ = "consumer"
			g.assignorName = meta.Assignor
			g.groupEpoch = meta.GroupEpoch
			g.consumerMembers = make(map[string]*consumerMember)
			g.partitionEpochs = make(map[uuid]map[int32]partitionOwner)
		default:
			g.typ = meta.GroupType
			g.protocolType = meta.ProtoType
			g.protocol = meta.Protocol
			g.generation = meta.Generation
		}
		c.groups.gs[name] = g
	}

	// Apply commits
	for ck, data := range r.commits {
		var entry groupLogEntry
		json.Unmarshal(data, &entry)
		g, ok := c.groups.gs[ck.group]
		if !ok {
			g = c.groups.newGroup(ck.group)
			c.groups.gs[ck.group] = g
		}
		oc := offsetCommit{
			offset:      entry.Offset,
			leaderEpoch: entry.Epoch,
			metadata:    entry.Metadata,
		}
		if entry.LastCommit != nil {
			oc.lastCommit = time.UnixMilli(*entry.LastCommit)
		}
		g.commits.set(ck.topic, ck.part, oc)
	}

	// Apply static members
	for sk, data := range r.statics {
		var entry groupLogEntry
		json.Unmarshal(data, &entry)
		g, ok := c.groups.gs[sk.group]
		if !ok {
			continue
		}
		if g.staticMembers == nil {
			g.staticMembers = make(map[string]string)
		}
		g.staticMembers[sk.instance] = entry.MemberID
	}

	return nil
}

func (c *Cluster) loadACLs(fsys fs, dir string) error {
	var pa persistACLs
	if found, err := readJSONFile(fsys, filepath.Join(dir, "acls.json"), &pa); err != nil || !found {
		return err
	}
	for _, a := range pa.ACLs {
		c.acls.add(acl{
			principal:    a.Principal,
			host:         a.Host,
			resourceType: kmsg.ACLResourceType(a.ResourceType),
			resourceName: a.ResourceName,
			pattern:      kmsg.ACLResourcePatternType(a.Pattern),
			operation:    kmsg.ACLOperation(a.Operation),
			permission:   kmsg.ACLPermissionType(a.Permission),
		})
	}
	return nil
}

func (c *Cluster) loadSASL(fsys fs, dir string) error {
	var ps persistSASL
	if found, err := readJSONFile(fsys, filepath.Join(dir, "sasl.json"), &ps); err != nil || !found {
		return err
	}
	if len(ps.Plain) > 0 {
		c.sasls.plain = ps.Plain
	}
	c.sasls.scram256 = persistToScram(ps.Scram256)
	c.sasls.scram512 = persistToScram(ps.Scram512)
	return nil
}

func (c *Cluster) loadQuotas(fsys fs, dir string) error {
	var pq persistQuotas
	if found, err := readJSONFile(fsys, filepath.Join(dir, "quotas.json"), &pq); err != nil || !found {
		return err
	}
	for _, q := range pq.Quotas {
		entity := make(quotaEntity, len(q.Entity))
		for i, ec := range q.Entity {
			entity[i] = quotaEntityComponent{
				entityType: ec.Type,
				name:       ec.Name,
			}
		}
		key := entity.key()
		c.quotas[key] = quotaEntry{
			entity: entity,
			values: q.Values,
		}
	}
	return nil
}

func (c *Cluster) loadSeqWindows(fsys fs, dir string) error {
	var psw persistSeqWindows
	if found, err := readJSONFile(fsys, filepath.Join(dir, "seq_windows.json"), &psw); err != nil || !found {
		return err
	}
	for _, w := range psw.Windows {
		pidinf, ok := c.pids.ids[w.PID]
		if !ok {
			continue
		}

		var pw pidwindow
		if w.Count > 0 {
			// v2 format: independent entries.
			for i, e := range w.Entries {
				pw.entries[i] = pidEntry{
					firstSeq: e.FirstSeq,
					nextSeq:  e.NextSeq,
					offset:   e.Offset,
				}
			}
			pw.count = w.Count
			pw.at = w.At
			pw.epoch = w.Epoch
			pw.seen = w.Seen
			pw.nextSeq = w.NextSeq
		} else if w.Seq != [5]int32{} {
			// v1 format (legacy overlapping pairs): convert to
			// independent entries by walking the circular buffer.
			pw.epoch = w.Epoch
			pw.seen = w.Seen
			pw.nextSeq = w.NextSeq
			if !pw.seen {
				pw.seen = true
				pw.nextSeq = w.Seq[w.At]
			}
			// Reconstruct entries from the overlapping pairs.
			// The old buffer stored seq[i]=firstSeq, seq[(i+1)%5]=nextSeq.
			// Walk from the oldest entry (at) backwards.
			for i := range 5 {
				idx := (int(w.At) - 1 - i + 10) % 5
				next := (idx + 1) % 5
				if w.Seq[idx] == 0 && w.Seq[next] == 0 && i > 0 {
					break
				}
				pw.entries[pw.count] = pidEntry{
					firstSeq: w.Seq[idx],
					nextSeq:  w.Seq[next],
					offset:   w.Offsets[idx],
				}
				pw.count++
			}
			pw.at = pw.count % 5
		}
		pidinf.windows.set(w.Topic, w.Part, pw)
	}
	return nil
}
