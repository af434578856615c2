package kfake

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FORMAT MIGRATION GUIDE
//
// Each file/entry embeds its own version. We support current version
// (currentPersistVersion) and one version back (N-1). On save, we
// always write currentPersistVersion.
//
// Append log entries are version-tagged per-entry, so old entries
// remain readable in-place. No need to rewrite large files on upgrade.
// New entries are appended at the current version.
//
// To evolve the format (bump from version N to N+1):
//
//   1. Bump currentPersistVersion from N to N+1.
//
//   2. For each type whose format changed, copy current type to
//      a versioned name (persistTopics -> persistTopicsVN), then
//      modify persistTopics for the new shape.
//
//   3. Write migration function: migrateTopicsVN(old) -> new
//
//   4. For JSON files: update loader to check version, decode old
//      type if version == N, call migration.
//      For append log entries: update entry decoder to handle both
//      version N and N+1 entries in the same file.
//
//   5. Delete v(N-1) migration code and types. Only keep one old
//      version. Users on v(N-1) must first load+save with v(N)
//      code, then upgrade to v(N+1).
//
//   6. Unchanged types need no migration.
//
// Segment files (.dat) use raw Kafka RecordBatch wire format and are
// version-independent. Index files (.idx) have a per-entry version
// byte, so .idx format changes follow the per-entry versioning
// pattern (step 4 above) without requiring segment file changes.

const currentPersistVersion = 1

// entryHeader is the framing for all append log entries.
// Format: [4 bytes length][4 bytes CRC32][2 bytes version][N bytes data]
// All multi-byte integers are little-endian.
const entryHeaderSize = 10 // 4 (length) + 4 (CRC) + 2 (version)

// writeEntry frames data with length+CRC+version and writes it to f
// in a single write call, then optionally fsyncs.
func writeEntry(f file, data []byte, syncW bool) error {
	bp := batchPool.Get().(*[]byte)
	buf := slices.Grow((*bp)[:0], entryHeaderSize+len(data))[:entryHeaderSize+len(data)]
	copy(buf[entryHeaderSize:], data)

	// length = len(version) + len(data)
	length := uint32(2 + len(data))
	binary.LittleEndian.PutUint32(buf[0:4], length)
	// CRC covers version + data (buf[8:] = version ++ data)
	binary.LittleEndian.PutUint16(buf[8:10], currentPersistVersion)
	binary.LittleEndian.PutUint32(buf[4:8], crc32.Checksum(buf[8:], crc32c))

	_, err := f.Write(buf)
	*bp = buf[:0]
	batchPool.Put(bp)
	if err != nil {
		return err
	}
	if syncW {
		return f.Sync()
	}
	return nil
}

// readEntries reads all valid framed entries from raw bytes.
// It returns the entries and the number of valid bytes consumed.
// Any trailing corrupt or partial entry is ignored (truncation point).
func readEntries(raw []byte) (entries []entryData, validBytes int) {
	pos := 0
	for pos+entryHeaderSize <= len(raw) {
		length := binary.LittleEndian.Uint32(raw[pos : pos+4])
		if length < 2 { // minimum is 2 bytes for version
			break
		}
		if pos+4+4+int(length) > len(raw) {
			break
		}

		storedCRC := binary.LittleEndian.Uint32(raw[pos+4 : pos+8])
		versionAndData := raw[pos+8 : pos+4+4+int(length)]

		if crc32.Checksum(versionAndData, crc32c) != storedCRC {
			break
		}

		version := binary.LittleEndian.Uint16(versionAndData[0:2])
		data := versionAndData[2:]

		entries = append(entries, entryData{
			version: version,
			data:    data,
		})
		pos += 4 + 4 + int(length)
	}
	return entries, pos
}

type (
	entryData struct {
		version uint16
		data    []byte
	}

	persistMeta struct {
		Version   int    `json:"version"`
		ClusterID string `json:"cluster_id"`
	}

	persistTopics struct {
		Version int            `json:"version"`
		Topics  []persistTopic `json:"topics"`
	}

	persistTopic struct {
		Name       string            `json:"name"`
		ID         uuid              `json:"id"`
		Partitions int               `json:"partitions"`
		Replicas   int               `json:"replicas"`
		Configs    map[string]string `json:"configs,omitempty"`
	}

	persistACLs struct {
		Version int          `json:"version"`
		ACLs    []persistACL `json:"acls"`
	}

	persistACL struct {
		Principal    string `json:"principal"`
		Host         string `json:"host"`
		ResourceType int8   `json:"resource_type"`
		ResourceName string `json:"resource_name"`
		Pattern      int8   `json:"pattern"`
		Operation    int8   `json:"operation"`
		Permission   int8   `json:"permission"`
	}

	persistSASL struct {
		Version  int                     `json:"version"`
		Plain    map[string]string       `json:"plain,omitempty"`
		Scram256 map[string]persistScram `json:"scram256,omitempty"`
		Scram512 map[string]persistScram `json:"scram512,omitempty"`
	}

	persistScram struct {
		Mechanism  string `json:"mechanism"`
		Salt       []byte `json:"salt"`
		SaltedPass []byte `json:"salted_pass"`
		Iterations int    `json:"iterations"`
	}

	persistBrokerConfigs struct {
		Version int               `json:"version"`
		Configs map[string]string `json:"configs"`
	}

	persistQuotas struct {
		Version int            `json:"version"`
		Quotas  []persistQuota `json:"quotas"`
	}

	persistQuota struct {
		Entity []persistQuotaEntityComponent `json:"entity"`
		Values map[string]float64            `json:"values"`
	}

	persistQuotaEntityComponent struct {
		Type string  `json:"type"`
		Name *string `json:"name"`
	}

	persistSeqWindows struct {
		Version int                     `json:"version"`
		Windows []persistSeqWindowEntry `json:"windows"`
	}

	persistSeqWindowEntry struct {
		PID   int64  `json:"pid"`
		Topic string `json:"topic"`
		Part  int32  `json:"partition"`

		// v2 format: independent entries.
		Entries [5]persistPidEntry `json:"entries,omitempty"`
		Count   uint8              `json:"count,omitempty"`

		// v1 format (legacy): overlapping-pair circular buffer.
		// Kept for backwards-compatible loading only.
		Seq     [5]int32 `json:"seq,omitempty"`
		Offsets [5]int64 `json:"offsets,omitempty"`

		At      uint8 `json:"at"`
		Epoch   int16 `json:"epoch"`
		Seen    bool  `json:"seen,omitempty"`
		NextSeq int32 `json:"next_seq,omitempty"`
	}

	persistPidEntry struct {
		FirstSeq int32 `json:"first_seq"`
		NextSeq  int32 `json:"next_seq"`
		Offset   int64 `json:"offset"`
	}

	persistPartSnapshot struct {
		Version          int                  `json:"version"`
		HighWatermark    int64                `json:"high_watermark"`
		LastStableOffset int64                `json:"last_stable_offset"`
		LogStartOffset   int64                `json:"log_start_offset"`
		Epoch            int32                `json:"epoch"`
		LeaderNode       int32                `json:"leader_node,omitempty"`
		MaxTimestamp     int64                `json:"max_timestamp"`
		CreatedAt        time.Time            `json:"created_at"`
		AbortedTxns      []persistAbortedTxn  `json:"aborted_txns,omitempty"`
		Segments         []persistSegmentInfo `json:"segments"`
	}

	persistAbortedTxn struct {
		ProducerID  int64 `json:"producer_id"`
		FirstOffset int64 `json:"first_offset"`
		LastOffset  int64 `json:"last_offset"`
	}

	persistSegmentInfo struct {
		BaseOffset int64 `json:"base_offset"`
		Size       int64 `json:"size"`
		MinEpoch   int32 `json:"min_epoch,omitempty"`
		MaxEpoch   int32 `json:"max_epoch,omitempty"`
	}
)

/////////////////////
// SEGMENT + INDEX
/////////////////////

// Segment files (.dat) contain pure RecordBatch wire bytes concatenated.
// Entry boundaries are found via RecordBatch Length (big-endian int32 at byte 8).
// RecordBatch has its own CRC for integrity.
//
// Index files (.idx) sit alongside each segment file and contain per-batch
// metadata as fixed-size 15-byte entries:
//   [1 byte: version]
//   [1 byte: checksum (low byte of crc32c of remaining 13 bytes)]
//   [4 bytes: epoch, little-endian]
//   [8 bytes: maxEarlierTimestamp, little-endian]
//   [1 byte: flags (bit 0 = inTx)]
//
// maxEarlierTimestamp is a running max that goes stale when earlier
// batches are dropped, so load recomputes it from the batch headers
// (rebuildMaxTimestampMeta) rather than trusting the stored value.

const indexEntrySize = 15

func indexFileName(baseOffset int64) string {
	return fmt.Sprintf("%d.idx", baseOffset)
}

// batchPool pools []byte buffers for batch encoding (encodeBatch) and
// log entry framing (writeEntry). Used in both osFS and memFS modes -
// memFS copies the buffer into its in-memory map, so the pooled slice
// is safe to reuse after Write returns.
var batchPool = sync.Pool{
	New: func() any {
		b := make([]byte, 0, 256)
		return &b
	},
}

func encodeBatch(b *partBatch) *[]byte {
	bp := batchPool.Get().(*[]byte)
	*bp = b.RecordBatch.AppendTo((*bp)[:0])
	return bp
}

func encodeIndexEntry(epoch int32, maxEarlierTS int64, inTx bool) [indexEntrySize]byte {
	var buf [indexEntrySize]byte
	buf[0] = currentPersistVersion
	binary.LittleEndian.PutUint32(buf[2:6], uint32(epoch))
	binary.LittleEndian.PutUint64(buf[6:14], uint64(maxEarlierTS))
	if inTx {
		buf[14] = 1
	}
	buf[1] = byte(crc32.Checksum(buf[2:], crc32c))
	return buf
}

func decodeIndexEntry(buf []byte) (epoch int32, maxEarlierTS int64, inTx, ok bool) {
	if len(buf) < indexEntrySize {
		return 0, 0, false, false
	}
	if byte(crc32.Checksum(buf[2:indexEntrySize], crc32c)) != buf[1] {
		return 0, 0, false, false
	}
	epoch = int32(binary.LittleEndian.Uint32(buf[2:6]))
	maxEarlierTS = int64(binary.LittleEndian.Uint64(buf[6:14]))
	inTx = buf[14]&1 != 0
	return epoch, maxEarlierTS, inTx, true
}

// decodeBatchRaw validates a RecordBatch CRC and parses it.
func decodeBatchRaw(raw []byte) (*kmsg.RecordBatch, error) {
	if len(raw) >= 21 {
		stored := binary.BigEndian.Uint32(raw[17:21])
		if computed := crc32.Checksum(raw[21:], crc32c); stored != computed {
			return nil, fmt.Errorf("RecordBatch CRC mismatch: stored=%08x computed=%08x", stored, computed)
		}
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil {
		return nil, fmt.Errorf("decoding RecordBatch: %w", err)
	}
	return &rb, nil
}

// readBatchRaw reads the raw RecordBatch wire bytes for a batch from its
// segment file. The returned bytes can be appended directly to a fetch
// response. Segment files contain pure RecordBatch bytes.
func (c *Cluster) readBatchRaw(pd *partData, segIdx int, meta *batchMeta) ([]byte, error) {
	if meta.segPos < 0 {
		return nil, fmt.Errorf("batch at offset %d was not persisted", meta.firstOffset)
	}
	f, err := c.segReadFile(pd, segIdx)
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(meta.segPos, io.SeekStart); err != nil {
		return nil, err
	}
	buf := make([]byte, meta.nbytes)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// segReadFile returns a read handle for the given segment. For the
// active segment (last in pd.segments), it reuses pd.activeSegFile
// which is opened O_RDWR|O_APPEND so it supports both reads and writes.
// For sealed segments, it lazily opens and caches seg.readFile.
// Safe because all I/O runs in the single Cluster.run() goroutine,
// and O_APPEND writes always seek to end regardless of read position.
func (c *Cluster) segReadFile(pd *partData, segIdx int) (file, error) {
	if segIdx == len(pd.segments)-1 && pd.activeSegFile != nil {
		return pd.activeSegFile, nil
	}
	seg := &pd.segments[segIdx]
	if seg.readFile != nil {
		return seg.readFile, nil
	}
	path := filepath.Join(partDir(c.storageDir, pd.t, pd.p), segmentFileName(seg.base))
	f, err := c.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	seg.readFile = f
	return f, nil
}

// readBatchFull reads and decodes a full partBatch from its segment file.
// Metadata (epoch, maxEarlierTimestamp, inTx) comes from the in-memory
// batchMeta. Used by compaction and ListOffsets timestamp search.
func (c *Cluster) readBatchFull(pd *partData, segIdx int, meta *batchMeta) (*partBatch, error) {
	raw, err := c.readBatchRaw(pd, segIdx, meta)
	if err != nil {
		return nil, err
	}
	rb, err := decodeBatchRaw(raw)
	if err != nil {
		return nil, err
	}
	return &partBatch{
		RecordBatch:         *rb,
		nbytes:              len(raw),
		epoch:               meta.epoch,
		maxEarlierTimestamp: meta.maxEarlierTimestamp,
		inTx:                meta.inTx,
	}, nil
}

//////////////////////////
// APPEND LOG ENTRIES
//////////////////////////

type (
	groupLogEntry struct {
		Type     string  `json:"type"`
		Group    string  `json:"g"`
		Topic    string  `json:"t,omitempty"`
		Part     int32   `json:"p,omitempty"`
		Offset   int64   `json:"o,omitempty"`
		Epoch    int32   `json:"e,omitempty"`
		Metadata *string `json:"m,omitempty"`

		// For commit entries: unix millis of last commit time (KIP-211)
		LastCommit *int64 `json:"lc,omitempty"`

		// For meta entries (classic groups)
		GroupType  string `json:"typ,omitempty"`
		ProtoType  string `json:"pt,omitempty"`
		Protocol   string `json:"pr,omitempty"`
		Generation int32  `json:"gen,omitempty"`

		// For meta848 entries (consumer groups)
		Assignor   string `json:"assignor,omitempty"`
		GroupEpoch int32  `json:"epoch848,omitempty"`

		// For static member entries
		InstanceID string `json:"instance,omitempty"`
		MemberID   string `json:"member,omitempty"`
	}

	pidLogEntry struct {
		Type    string `json:"type"` // init, endtx, timeout
		PID     int64  `json:"pid"`
		Epoch   int16  `json:"epoch"`
		TxID    string `json:"txid,omitempty"`
		Timeout int32  `json:"timeout,omitempty"`
		Commit  *bool  `json:"commit,omitempty"`
	}
)

type (
	glCommitKey struct {
		group, topic string
		part         int32
	}
	glStaticKey struct {
		group, instance string
	}
	glReplay struct {
		metas   map[string][]byte
		commits map[glCommitKey][]byte
		statics map[glStaticKey][]byte
	}
)

// replayGroupsLog replays append log entries keeping the latest per key.
// Used by both loadGroupsLog (startup) and compactGroupsLog (live).
func replayGroupsLog(entries []entryData) glReplay {
	r := glReplay{
		metas:   make(map[string][]byte),
		commits: make(map[glCommitKey][]byte),
		statics: make(map[glStaticKey][]byte),
	}
	for _, e := range entries {
		var entry groupLogEntry
		if err := json.Unmarshal(e.data, &entry); err != nil {
			continue
		}
		switch entry.Type {
		case "commit":
			r.commits[glCommitKey{entry.Group, entry.Topic, entry.Part}] = e.data
		case "delete":
			delete(r.commits, glCommitKey{entry.Group, entry.Topic, entry.Part})
		case "meta", "meta848":
			r.metas[entry.Group] = e.data
		case "static":
			if entry.MemberID == "" {
				delete(r.statics, glStaticKey{entry.Group, entry.InstanceID})
			} else {
				r.statics[glStaticKey{entry.Group, entry.InstanceID}] = e.data
			}
		}
	}
	return r
}

/////////////////////
// WRITE HELPERS
/////////////////////

// writeJSONFile atomically writes v as JSON to path by writing to a
// temporary file, fsyncing, and renaming. This ensures readers never
// see a partially-written file even if the process crashes mid-write.
func writeJSONFile(fsys fs, path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("marshaling %s: %w", path, err)
	}
	tmpPath := path + ".tmp"
	f, err := fsys.OpenFile(tmpPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("creating %s: %w", tmpPath, err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmpPath, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", tmpPath, err)
	}
	return fsys.Rename(tmpPath, path)
}

// readJSONFile reads and unmarshals a JSON file. Returns false if the
// file does not exist. Mirrors writeJSONFile for save/load symmetry.
func readJSONFile(fsys fs, path string, v any) (bool, error) {
	data, err := fsys.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("parsing %s: %w", filepath.Base(path), err)
	}
	return true, nil
}

// appendLogEntry encodes v as JSON and appends it as a framed entry.
// Returns the total bytes written (header + data).
func appendLogEntry(f file, v any, syncW bool) (int, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	return entryHeaderSize + len(data), writeEntry(f, data, syncW)
}

// partDir returns the partition directory path, URL-escaping for fs safety.
func partDir(dataDir, topic string, part int32) string {
	escaped := url.PathEscape(topic)
	return filepath.Join(dataDir, "partitions", fmt.Sprintf("%s-%d", escaped, part))
}

// segmentFileName returns the segment file name for a given base offset.
func segmentFileName(baseOffset int64) string {
	return fmt.Sprintf("%d.dat", baseOffset)
}
