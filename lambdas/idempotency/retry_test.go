package idempotency

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// lostResponseDB applies each write twice and answers with the second
// attempt's outcome: what the SDK retryer produces when the response to a
// successful write is lost on the network and the request is sent again.
type lostResponseDB struct {
	DynamoDBAPI
	put, update, delete bool
}

func (l lostResponseDB) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if l.put {
		if _, err := l.DynamoDBAPI.PutItem(ctx, in, o...); err != nil {
			return nil, err
		}
	}
	return l.DynamoDBAPI.PutItem(ctx, in, o...)
}

func (l lostResponseDB) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if l.update {
		if _, err := l.DynamoDBAPI.UpdateItem(ctx, in, o...); err != nil {
			return nil, err
		}
	}
	return l.DynamoDBAPI.UpdateItem(ctx, in, o...)
}

func (l lostResponseDB) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if l.delete {
		if _, err := l.DynamoDBAPI.DeleteItem(ctx, in, o...); err != nil {
			return nil, err
		}
	}
	return l.DynamoDBAPI.DeleteItem(ctx, in, o...)
}

// TestRetriedWriteMeetsItsOwnEffect: a write retried after a lost response
// fails its condition against its own first attempt; that is success, not
// a foreign lock or a lost lock.
func TestRetriedWriteMeetsItsOwnEffect(t *testing.T) {
	for _, b := range []struct {
		name string
		db   DynamoDBAPI
	}{{"GetItem fallback", dynalite.Client}, {"ALL_OLD", allOldDB{inner: dynalite.Client}}} {
		for _, tc := range []struct {
			name      string
			db        lostResponseDB
			handler   error
			wantErr   error
			wantState Status // "" = no item
		}{
			{name: "claim", db: lostResponseDB{put: true}, wantState: StatusCompleted},
			{name: "completion", db: lostResponseDB{update: true}, wantState: StatusCompleted},
			{name: "permanent failure", db: lostResponseDB{update: true}, handler: errTarjetaRechazada, wantErr: errTarjetaRechazada, wantState: StatusFailed},
			{name: "release", db: lostResponseDB{delete: true}, handler: errTransient, wantErr: errTransient},
		} {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				db := tc.db
				db.DynamoDBAPI = b.db
				e := newEnvWith(t, db, nil)
				key, _ := KeyCobro("PED-RETRY")
				runs := 0
				v, err := Do(context.Background(), e.store, key, func(context.Context) (string, error) {
					runs++
					return "ch_1", tc.handler
				})
				if runs != 1 {
					t.Fatalf("handler ran %d times", runs)
				}
				if tc.wantErr == nil && (err != nil || v != "ch_1") {
					t.Fatalf("got %q, %v", v, err)
				}
				if tc.wantErr != nil && (!errors.Is(err, tc.wantErr) || errors.Is(err, ErrLockLost) || errors.Is(err, ErrStore)) {
					t.Fatalf("want exactly the handler's error %v, got %v", tc.wantErr, err)
				}
				item := e.rawItem(t, key)
				if tc.wantState == "" {
					if len(item) != 0 {
						t.Fatalf("key still held: %v", item)
					}
					return
				}
				if st := sAttr(t, item, attrEstado); st != string(tc.wantState) {
					t.Fatalf("estado %s, want %s", st, tc.wantState)
				}
			})
		}
	}
}
