package broker_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/faultline-dev/faultline/runtime/kafka/internal/kafkatest"
)

// The embedded broker answers DescribeTopicPartitions (what Kafka's Java
// admin client asks to describe a topic: kafka-topics --describe, Flink's
// Kafka source) with the eligible leader replicas of each partition as
// arrays, empty, as Kafka does: the Java client fails with a
// NullPointerException on null ones.
func TestDescribeTopicPartitionsAnswersAsKafkaDoes(t *testing.T) {
	e, _ := kafkatest.Embedded(t)
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "orders"
	req.Topics = append(req.Topics, rt)
	req.ResponsePartitionLimit = 100
	resp := request(t, e.Addr, req)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("topics = %+v, want orders", resp.Topics)
	}
	parts := resp.Topics[0].Partitions
	if len(parts) != 4 {
		t.Fatalf("orders has %d partitions, want 4", len(parts))
	}
	for _, p := range parts {
		if p.EligibleLeaderReplicas == nil || p.LastKnownELR == nil {
			t.Errorf("partition %d: EligibleLeaderReplicas %v, LastKnownELR %v: null, want empty arrays",
				p.Partition, p.EligibleLeaderReplicas, p.LastKnownELR)
		}
		if len(p.Replicas) != 1 || len(p.ISR) != 1 {
			t.Errorf("partition %d: replicas %v, ISR %v, want one broker", p.Partition, p.Replicas, p.ISR)
		}
	}
}

// request sends req to the embedded broker of a test with franz-go's
// client, which encodes requests in the versions Kafka's Java client uses.
func request[R kmsg.Response](t *testing.T, addr string, req interface {
	kmsg.Request
	RequestWith(context.Context, kmsg.Requestor) (R, error)
}) R {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// A created topic's configs come back as an array, empty when none was
// set: Kafka's Java admin client reads them without a null check
// (kafka-topics --create).
func TestCreateTopicsAnswersConfigsAsKafkaDoes(t *testing.T) {
	e, _ := kafkatest.Embedded(t)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "notes", 2, 1
	req.Topics = append(req.Topics, rt)
	resp := request(t, e.Addr, req)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("topics = %+v, want notes created", resp.Topics)
	}
	if resp.Topics[0].Configs == nil {
		t.Error("the created topic's configs are null, want an array")
	}
}

// kafka-consumer-groups --list asks for the groups of types "Consumer" and
// "Classic", capitalised: Kafka matches types and states regardless of case.
func TestListGroupsFiltersRegardlessOfCase(t *testing.T) {
	e, _ := kafkatest.Embedded(t)
	describe := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	dt.Topic = "orders"
	describe.Topics = append(describe.Topics, dt)
	described := request(t, e.Addr, describe)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "readers"
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic, ct.TopicID = "orders", described.Topics[0].TopicID
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 0
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if resp := request(t, e.Addr, commit); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: error %d", resp.Topics[0].Partitions[0].ErrorCode)
	}

	list := kmsg.NewPtrListGroupsRequest()
	list.TypesFilter = []string{"Consumer", "Classic"}
	list.StatesFilter = []string{"EMPTY"}
	resp := request(t, e.Addr, list)
	if len(resp.Groups) != 1 || resp.Groups[0].Group != "readers" {
		t.Errorf("groups = %+v, want readers", resp.Groups)
	}
}

// A consumer with a group id asks for the group's offsets before the group
// exists: Kafka answers no offset (-1) and no error, and Kafka's Java
// consumer fails on GROUP_ID_NOT_FOUND.
func TestOffsetFetchOfAnUnknownGroupAnswersNoOffsets(t *testing.T) {
	e, _ := kafkatest.Embedded(t)
	req := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = "new-readers"
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = "orders", []int32{0, 1}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp := request(t, e.Addr, req)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("groups = %+v, want new-readers with no error", resp.Groups)
	}
	g := resp.Groups[0]
	if len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 2 {
		t.Fatalf("topics = %+v, want orders/0 and orders/1", g.Topics)
	}
	for _, p := range g.Topics[0].Partitions {
		if p.Offset != -1 || p.ErrorCode != 0 {
			t.Errorf("orders/%d: offset %d, error %d; want -1 and none", p.Partition, p.Offset, p.ErrorCode)
		}
	}
}
