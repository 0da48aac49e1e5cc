package localaws

import (
	"context"
	"testing"
	"time"
)

func TestStopAndStartOnTheSameAddress(t *testing.T) {
	srv := StartRedis(t)
	rdb := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := RedisKeyPrefix(t) + "k"
	if err := rdb.Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr
	srv.Stop()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("PING answered after Stop")
	}
	srv.Start()
	if srv.Addr != addr {
		t.Fatalf("address changed from %s to %s", addr, srv.Addr)
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Start: %v", err)
	}
	if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("data survived a restart: persistence should be off")
	}
}
