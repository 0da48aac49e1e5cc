package datastore_test

import (
	"reflect"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"

	"github.com/mercadofresco/integration/constructs/datastore"
	"github.com/mercadofresco/integration/internal/cdktest"
)

func TestMain(m *testing.M) { cdktest.Main(m) }

// The grant names the operations the alarms watch, as IAM spells them.
func TestActionsOfTheOperations(t *testing.T) {
	s := datastore.Schema{Operations: []awsdynamodb.Operation{awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_DELETE_ITEM, awsdynamodb.Operation_BATCH_WRITE_ITEM}}
	if got, want := s.Actions(), []string{"dynamodb:GetItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Actions() = %v, want %v", got, want)
	}
}
