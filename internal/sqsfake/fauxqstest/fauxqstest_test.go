package fauxqstest_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mercadofresco/integration/internal/sqsfake/fauxqstest"
)

// TestVirtualClock starts fauxqs, and shows that its clock stands still
// until Advance: a message's SentTimestamp is the virtual time, and a
// 400 s visibility timeout ends after Advance(400 s), not before.
func TestVirtualClock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)
	srv, err := fauxqstest.Launch(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("reloj"), Attributes: map[string]string{"VisibilityTimeout": "400"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	recv := func() []types.Message {
		t.Helper()
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	got := recv()
	if len(got) != 1 || got[0].Attributes["SentTimestamp"] != strconv.FormatInt(start.UnixMilli(), 10) {
		t.Fatalf("first receive = %+v, want SentTimestamp %d", got, start.UnixMilli())
	}
	if now, err := srv.Advance(399 * time.Second); err != nil || !now.Equal(start.Add(399*time.Second)) || !srv.Now().Equal(now) {
		t.Fatalf("Advance = %s, %v", now, err)
	}
	if got := recv(); len(got) != 0 {
		t.Fatalf("visible 1 s before its visibility timeout: %+v", got)
	}
	if _, err := srv.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	if got := recv(); len(got) != 1 || got[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after the timeout = %+v, want the message with count 2", got)
	}
	if _, err := srv.Advance(-time.Second); err == nil {
		t.Error("the clock moved back")
	}
}

// TestLaunchWithoutNodeModules: with no node_modules above the working
// directory Launch fails at once and says what to run (never a skip).
func TestLaunchWithoutNodeModules(t *testing.T) {
	t.Chdir(t.TempDir())
	srv, err := fauxqstest.Launch(context.Background(), time.Now())
	if err == nil {
		srv.Close()
		t.Fatal("Launch found fauxqs outside the repository")
	}
	if !strings.Contains(err.Error(), "make install") {
		t.Errorf("err = %v, want it to name make install", err)
	}
}
