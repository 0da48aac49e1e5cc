package confirmationmail

import (
	"cmp"
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

// DefaultEnvioTTL is how long the record of a send is kept: the consumer's
// replay window (lambdaapi.WindowCorreo, 45 days), so a redrive the
// consumer admits always finds it, even after a released idempotency
// record (docs/design.md#confirmation-mail). NewProcessor refuses a shorter TTL than
// its window.
const DefaultEnvioTTL = lambdaapi.WindowCorreo

// States of a send record.
const (
	// EstadoIntentando: a provider was asked and may have the e-mail.
	EstadoIntentando = "INTENTANDO"
	// EstadoEnviado: a provider accepted it (id recorded).
	EstadoEnviado = "ENVIADO"
)

// ErrEnvios wraps failures of the send records' table.
var ErrEnvios = errors.New("correo: send record store")

// Envio is a send record: which provider has (or may have) the e-mail.
type Envio struct {
	Estado    string `json:"estado,omitempty"`
	Proveedor string `json:"proveedor"`
	ID        string `json:"id"`
}

// Envios keeps one record per e-mail, in the idempotency table under
// "<key>:envio" (a ':' cannot appear in a key component, so it never
// collides with an idempotency key): the provider that was asked, before
// it is asked, and its message id once it accepted. Unlike the idempotency
// record, it survives a release of the key, which is what lets the next
// delivery know which provider may already hold the e-mail.
type Envios struct {
	DB    idempotency.DynamoDBAPI
	Table string
	// TTL of a record (default DefaultEnvioTTL).
	TTL time.Duration
	Now func() time.Time
}

func (e *Envios) ttl() time.Duration { return cmp.Or(e.TTL, DefaultEnvioTTL) }

func (e *Envios) key(k string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{lambdaapi.IdempotencyKeyAttribute: &types.AttributeValueMemberS{Value: k + ":envio"}}
}

func (e *Envios) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// Get returns the record of key (nil when there is none or it expired).
func (e *Envios) Get(ctx context.Context, key string) (*Envio, error) {
	out, err := e.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.Table), Key: e.key(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEnvios, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	if exp, ok := out.Item[lambdaapi.IdempotencyTTLAttribute].(*types.AttributeValueMemberN); ok {
		if n, err := strconv.ParseInt(exp.Value, 10, 64); err == nil && n < e.now().Unix() {
			return nil, nil // expired, not yet deleted by TTL
		}
	}
	s := func(name string) string {
		if v, ok := out.Item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	return &Envio{Estado: s("estado"), Proveedor: s("proveedor"), ID: s("id_proveedor")}, nil
}

// Begin records that provider is about to be asked.
func (e *Envios) Begin(ctx context.Context, key, provider string) error {
	ttl := e.ttl()
	item := e.key(key)
	item["estado"] = &types.AttributeValueMemberS{Value: EstadoIntentando}
	item["proveedor"] = &types.AttributeValueMemberS{Value: provider}
	item["intentado_en"] = &types.AttributeValueMemberS{Value: e.now().UTC().Format(time.RFC3339Nano)}
	item[lambdaapi.IdempotencyTTLAttribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(e.now().Add(ttl).Unix(), 10)}
	// The caller holds the e-mail's idempotency lock, so no one else
	// writes this record meanwhile; a leftover record of the same provider
	// is overwritten.
	_, err := e.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(e.Table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(estado) OR #x < :now OR (estado = :i AND proveedor = :p)"),
		ExpressionAttributeNames: map[string]string{"#x": lambdaapi.IdempotencyTTLAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":i": &types.AttributeValueMemberS{Value: EstadoIntentando}, ":p": &types.AttributeValueMemberS{Value: provider},
			":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(e.now().Unix(), 10)},
		},
	})
	if err != nil {
		return fmt.Errorf("%w: begin %s via %s: %w", ErrEnvios, key, provider, err)
	}
	return nil
}

// Sent records that provider accepted the e-mail with id.
func (e *Envios) Sent(ctx context.Context, key, provider, id string) error {
	_, err := e.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(e.Table), Key: e.key(key),
		UpdateExpression:    aws.String("SET estado = :e, id_proveedor = :id, enviado_en = :t"),
		ConditionExpression: aws.String("proveedor = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":e": &types.AttributeValueMemberS{Value: EstadoEnviado}, ":id": &types.AttributeValueMemberS{Value: id},
			":t": &types.AttributeValueMemberS{Value: e.now().UTC().Format(time.RFC3339Nano)}, ":p": &types.AttributeValueMemberS{Value: provider},
		},
	})
	if err != nil {
		return fmt.Errorf("%w: record %s sent via %s: %w", ErrEnvios, key, provider, err)
	}
	return nil
}

// Forget removes the record of a provider that did not take the e-mail,
// so that another one may be asked.
func (e *Envios) Forget(ctx context.Context, key, provider string) error {
	_, err := e.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(e.Table), Key: e.key(key),
		ConditionExpression:       aws.String("estado = :i AND proveedor = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":i": &types.AttributeValueMemberS{Value: EstadoIntentando}, ":p": &types.AttributeValueMemberS{Value: provider}},
	})
	var cf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &cf) {
		return fmt.Errorf("%w: forget %s via %s: %w", ErrEnvios, key, provider, err)
	}
	return nil
}
