package payment

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mercadofresco/integration/lambdas/idempotency"
	"github.com/mercadofresco/integration/lambdas/lambdaapi"
)

// ErrCallsExhausted: the operation (one order's charge, or its refund) has
// already made lambdaapi.MaxGatewayCallsPerOperation calls to the gateway,
// over every attempt of every workflow execution of the order; no more are
// made.
var ErrCallsExhausted = errors.New("payment: the operation's gateway calls are spent")

// CallBudget is the httpdep.CallCounter of the gateway: a counter per
// operation key in the idempotency table (item "<key>#llamadas", expiring
// with the records), taken before each call and given back when the
// breaker refuses it, at most lambdaapi.MaxGatewayCallsPerOperation over
// every execution of the order (docs/design.md#payment-tasks).
type CallBudget struct {
	db     idempotency.DynamoDBAPI
	table  string
	max    int
	expiry time.Duration
	now    func() time.Time
}

// NewCallBudget returns the budget on table (mercadofresco-idempotencia)
// with the bound of lambdaapi.MaxGatewayCallsPerOperation.
func NewCallBudget(db idempotency.DynamoDBAPI, table string) (*CallBudget, error) {
	if db == nil || table == "" {
		return nil, fmt.Errorf("payment: call budget needs a DynamoDB client and a table")
	}
	return &CallBudget{db: db, table: table, max: lambdaapi.MaxGatewayCallsPerOperation, expiry: 24 * time.Hour, now: time.Now}, nil
}

func (b *CallBudget) itemKey(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{lambdaapi.IdempotencyKeyAttribute: &types.AttributeValueMemberS{Value: key + "#llamadas"}}
}

// Take spends one call of the operation key. It returns ErrCallsExhausted
// when the budget is spent, or the DynamoDB error wrapped with
// idempotency.ErrStore (the call must not be made then either).
func (b *CallBudget) Take(ctx context.Context, key string) error {
	_, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(b.table),
		Key:                 b.itemKey(key),
		UpdateExpression:    aws.String("ADD llamadas :uno SET #exp = if_not_exists(#exp, :exp)"),
		ConditionExpression: aws.String("attribute_not_exists(llamadas) OR llamadas < :max"),
		ExpressionAttributeNames: map[string]string{
			"#exp": lambdaapi.IdempotencyTTLAttribute,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":uno": &types.AttributeValueMemberN{Value: "1"},
			":max": &types.AttributeValueMemberN{Value: strconv.Itoa(b.max)},
			":exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(b.now().Add(b.expiry).Unix(), 10)},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return fmt.Errorf("%w (%d calls for %s)", ErrCallsExhausted, b.max, key)
	case err != nil:
		return fmt.Errorf("%w: payment: call budget of %s: %w", idempotency.ErrStore, key, err)
	}
	return nil
}

// Refund gives back a call that was not made (the breaker refused it).
// Best effort: a failed refund leaves the unit spent.
func (b *CallBudget) Refund(ctx context.Context, key string) {
	_, _ = b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(b.table),
		Key:                       b.itemKey(key),
		UpdateExpression:          aws.String("ADD llamadas :menos"),
		ConditionExpression:       aws.String("llamadas > :cero"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":menos": &types.AttributeValueMemberN{Value: "-1"}, ":cero": &types.AttributeValueMemberN{Value: "0"}},
	})
}
