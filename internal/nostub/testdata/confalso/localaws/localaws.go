// Package localaws is a fixture of the nostub test: the name of the tests'
// local AWS, which a main must never import.
package localaws

// Queue answers without SQS.
func Queue(id string) string { return "queue-" + id }
