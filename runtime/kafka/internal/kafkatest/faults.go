package kafkatest

import (
	"fmt"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/faultline-dev/faultline/third_party/kfake"
)

// Code is a Sarama error as the error code of a Kafka answer.
func Code(e sarama.KError) int16 { return int16(e) }

// Inject answers the next n requests of key with an error answer: code
// on everything the request asked for, throttled for throttleMs (all of
// them when n < 0).
func Inject(c *kfake.Cluster, key kmsg.Key, n int, code int16, throttleMs int32) {
	answer := func(req kmsg.Request) (kmsg.Response, error, bool) {
		if n < 0 {
			c.KeepControl()
		}
		return errorAnswer(req, code, throttleMs), nil, true
	}
	for i := 0; i < max(n, 1); i++ {
		c.ControlKey(int16(key), answer)
	}
}

// errorAnswer is the response to req with error code on everything it
// asked for, throttled for throttleMs.
func errorAnswer(req kmsg.Request, code int16, throttleMs int32) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		resp.ThrottleMillis = throttleMs
		for _, t := range r.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.BaseOffset = p.Partition, code, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ThrottleMillis, resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = throttleMs, code, -1, -1
		return resp
	case *kmsg.AddPartitionsToTxnRequest:
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		resp.ThrottleMillis = throttleMs
		for _, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.EndTxnRequest:
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ThrottleMillis, resp.ErrorCode = throttleMs, code
		return resp
	case *kmsg.OffsetCommitRequest:
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.ThrottleMillis = throttleMs
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	panic(fmt.Sprintf("no error answer for %T", req))
}
