package kafka

import (
	"crypto/sha256"
	"crypto/sha512"
	"hash"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// scramClient adapts xdg-go/scram (the SCRAM implementation Sarama's own
// examples use) to Sarama's SCRAMClient.
type scramClient struct {
	*scram.Client
	*scram.ClientConversation
	hash scram.HashGeneratorFcn
}

func (x *scramClient) Begin(user, password, authzID string) error {
	c, err := x.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	x.Client = c
	x.ClientConversation = c.NewConversation()
	return nil
}

func (x *scramClient) Step(challenge string) (string, error) {
	return x.ClientConversation.Step(challenge)
}
func (x *scramClient) Done() bool { return x.ClientConversation.Done() }

func scramSHA256() sarama.SCRAMClient {
	return &scramClient{hash: func() hash.Hash { return sha256.New() }}
}

func scramSHA512() sarama.SCRAMClient {
	return &scramClient{hash: func() hash.Hash { return sha512.New() }}
}
