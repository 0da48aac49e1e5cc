// Command cmd is a fixture of the nostub test: a main that reaches a stub.
package main

import (
	"fmt"

	"github.com/mercadofresco/integration/internal/nostub/testdata/conmaqueta/almacen"
)

func main() { fmt.Println(almacen.New().Prepare("P1")) }
