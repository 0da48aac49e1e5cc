package signing_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/mercadofresco/integration/lambdas/signing"
)

// fakeSM holds versions by stage and counts reads.
type fakeSM struct {
	mu     sync.Mutex
	stages map[string]signing.Key
	reads  int
}

func (f *fakeSM) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	k, ok := f.stages[aws.ToString(in.VersionStage)]
	if !ok {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no such stage")}
	}
	return &secretsmanager.GetSecretValueOutput{VersionId: aws.String(k.ID), SecretString: aws.String(string(k.Secret))}, nil
}

func (f *fakeSM) rotate(k signing.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stages[signing.StagePrevious] = f.stages[signing.StageCurrent]
	f.stages[signing.StageCurrent] = k
}

func key(id string) signing.Key {
	return signing.Key{ID: id, Secret: []byte(strings.Repeat(id, 40)[:40])}
}

func TestRotation(t *testing.T) {
	ctx := context.Background()
	sm := &fakeSM{stages: map[string]signing.Key{signing.StageCurrent: key("a")}}
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	signer, _ := signing.NewSecretSource(sm, "firma", clock)
	verifier, _ := signing.NewSecretSource(sm, "firma", clock)
	c := signing.Charge{EventID: "e", OrderID: "P", AmountCents: 100, Currency: "EUR", CardToken: "t"}

	oldSig, err := signer.Sign(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifier.Verify(ctx, c, oldSig); err != nil {
		t.Fatalf("never rotated (no AWSPREVIOUS): %v", err)
	}
	sm.rotate(key("b"))
	// The signer still holds "a" (within TTL): the verifier, holding "a"
	// too, accepts; after MinRefreshGap, a "b" signature makes it read again.
	if err := verifier.Verify(ctx, c, oldSig); err != nil {
		t.Fatalf("signature of the previous key after a rotation: %v", err)
	}
	now = now.Add(signing.KeyTTL)
	newSig, _ := signer.Sign(ctx, c)
	if id := keyID(newSig); id != "b" {
		t.Fatalf("signer after TTL signs with %q, want b", id)
	}
	reads := sm.reads
	if err := verifier.Verify(ctx, c, newSig); err != nil {
		t.Fatalf("signature of the new key: %v", err)
	}
	if err := verifier.Verify(ctx, c, oldSig); err != nil {
		t.Fatalf("previous key after the verifier's refresh: %v", err)
	}
	// An unknown key id within MinRefreshGap of a read reads nothing.
	forged, _ := signing.Sign(key("z"), c)
	if err := verifier.Verify(ctx, c, forged); !errors.Is(err, signing.ErrUnknownKey) {
		t.Fatalf("unknown key: %v", err)
	}
	if got := sm.reads - reads; got != 2 {
		t.Fatalf("%d reads for one refresh and a forged key id, want 2 (current and previous once)", got)
	}
}

func TestShortSecretRefused(t *testing.T) {
	sm := &fakeSM{stages: map[string]signing.Key{signing.StageCurrent: {ID: "a", Secret: []byte("e2e0123")}}}
	s, _ := signing.NewSecretSource(sm, "firma", nil)
	if _, err := s.Current(context.Background()); !errors.Is(err, signing.ErrBadKey) {
		t.Fatalf("Current = %v, want ErrBadKey", err)
	}
}
