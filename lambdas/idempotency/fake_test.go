package idempotency

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// scriptedDB answers each operation with a function; a nil function fails
// the test when called. It exercises paths dynalite cannot: DynamoDB's
// ALL_OLD item on a failed condition, throttling.
type scriptedDB struct {
	t      *testing.T
	get    func(*dynamodb.GetItemInput) (*dynamodb.GetItemOutput, error)
	put    func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error)
	update func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error)
	delete func(*dynamodb.DeleteItemInput) (*dynamodb.DeleteItemOutput, error)
}

func (f *scriptedDB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if f.get == nil {
		f.t.Error("unexpected GetItem")
		return &dynamodb.GetItemOutput{}, nil
	}
	return f.get(in)
}

func (f *scriptedDB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if f.put == nil {
		f.t.Error("unexpected PutItem")
		return &dynamodb.PutItemOutput{}, nil
	}
	return f.put(in)
}

func (f *scriptedDB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if f.update == nil {
		f.t.Error("unexpected UpdateItem")
		return &dynamodb.UpdateItemOutput{}, nil
	}
	return f.update(in)
}

func (f *scriptedDB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if f.delete == nil {
		f.t.Error("unexpected DeleteItem")
		return &dynamodb.DeleteItemOutput{}, nil
	}
	return f.delete(in)
}

// TestAllOldAnswersDuplicateInOneCall: when DynamoDB returns the existing
// item with the failed condition, no GetItem follows.
func TestAllOldAnswersDuplicateInOneCall(t *testing.T) {
	exp := attrN(time.Now().Add(time.Hour).Unix())
	for _, tc := range []struct {
		name  string
		item  map[string]types.AttributeValue
		check func(t *testing.T, v string, err error)
	}{
		{"COMPLETADO", map[string]types.AttributeValue{attrEstado: attrS("COMPLETADO"), attrResultado: attrS(`"ch_1"`), attrExpiraEn: exp}, func(t *testing.T, v string, err error) {
			if err != nil || v != "ch_1" {
				t.Fatalf("got %q, %v", v, err)
			}
		}},
		{"FALLIDO", map[string]types.AttributeValue{attrEstado: attrS("FALLIDO"), attrErrorCodigo: attrS("tarjeta_rechazada"), attrErrorMensaje: attrS("declined"), attrExpiraEn: exp}, func(t *testing.T, v string, err error) {
			if !errors.Is(err, errTarjetaRechazada) {
				t.Fatalf("got %v", err)
			}
		}},
		{"EN_CURSO", map[string]types.AttributeValue{attrEstado: attrS("EN_CURSO"), attrCaducaBloqueo: attrN(time.Now().Add(time.Minute).UnixMilli()), attrExpiraEn: exp}, func(t *testing.T, v string, err error) {
			if !errors.Is(err, ErrInProgress) {
				t.Fatalf("got %v", err)
			}
		}},
		{"corrupt", map[string]types.AttributeValue{attrEstado: attrS("??"), attrExpiraEn: exp}, func(t *testing.T, v string, err error) {
			if !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("got %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			puts := 0
			db := &scriptedDB{t: t, put: func(in *dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) {
				puts++
				if in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureAllOld {
					t.Errorf("claim does not ask for ALL_OLD")
				}
				return nil, &types.ConditionalCheckFailedException{Message: new("The conditional request failed"), Item: tc.item}
			}}
			s, err := NewStore(db, Config{TableName: "t"})
			if err != nil {
				t.Fatal(err)
			}
			v, err := Do(context.Background(), s, "cobro:PED-1", func(context.Context) (string, error) {
				t.Error("handler ran")
				return "", nil
			})
			tc.check(t, v, err)
			if puts != 1 {
				t.Fatalf("%d PutItem calls, want 1", puts)
			}
		})
	}
}

// TestThrottlingIsAStoreError: throttling is transient (ErrStore), the
// handler does not run, and nothing is retried by the library itself (the
// SDK retryer and the queue own retries).
func TestThrottlingIsAStoreError(t *testing.T) {
	throttled := &smithy.GenericAPIError{Code: "ThrottlingException", Message: "rate exceeded"}
	db := &scriptedDB{t: t, put: func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) { return nil, throttled }}
	s, _ := NewStore(db, Config{TableName: "t"})
	_, err := Do(context.Background(), s, "cobro:PED-1", func(context.Context) (string, error) {
		t.Error("handler ran")
		return "", nil
	})
	if !errors.Is(err, ErrStore) || !errors.Is(err, throttled) {
		t.Fatalf("got %v", err)
	}
}

// TestCompletionFailureIsReported: if the result cannot be recorded (here
// a store outage after the side effect), Do says so rather than pretend.
func TestCompletionFailureIsReported(t *testing.T) {
	outage := errors.New("connection reset")
	db := &scriptedDB{t: t,
		put:    func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) { return &dynamodb.PutItemOutput{}, nil },
		update: func(*dynamodb.UpdateItemInput) (*dynamodb.UpdateItemOutput, error) { return nil, outage },
	}
	s, _ := NewStore(db, Config{TableName: "t"})
	_, err := Do(context.Background(), s, "cobro:PED-1", func(context.Context) (string, error) { return "ch_1", nil })
	if !errors.Is(err, ErrStore) || !errors.Is(err, outage) {
		t.Fatalf("got %v", err)
	}
}

// TestFinalizeSurvivesCancellation: the outcome is recorded even when the
// caller's context ends while the handler runs.
func TestFinalizeSurvivesCancellation(t *testing.T) {
	var updateCtxErr error
	db := &scriptedDB{t: t,
		put: func(*dynamodb.PutItemInput) (*dynamodb.PutItemOutput, error) { return &dynamodb.PutItemOutput{}, nil },
	}
	s, _ := NewStore(countCtx{db, &updateCtxErr}, Config{TableName: "t"})
	ctx, cancel := context.WithCancel(context.Background())
	v, err := Do(ctx, s, "cobro:PED-1", func(context.Context) (string, error) { cancel(); return "ch_1", nil })
	if err != nil || v != "ch_1" {
		t.Fatalf("got %q, %v", v, err)
	}
	if updateCtxErr != nil {
		t.Fatalf("completion ran with a dead context: %v", updateCtxErr)
	}
}

// countCtx records the context state seen by UpdateItem.
type countCtx struct {
	*scriptedDB
	seen *error
}

func (c countCtx) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	*c.seen = ctx.Err()
	return &dynamodb.UpdateItemOutput{}, nil
}
