// Command cmd is a fixture of the nostub test: a main that links a test double.
package main

import (
	"fmt"

	"github.com/mercadofresco/integration/internal/nostub/testdata/confalso/fakealmacen"
	"github.com/mercadofresco/integration/internal/nostub/testdata/confalso/localaws"
)

func main() { fmt.Println(fakealmacen.Prepare("P1"), localaws.Queue("Q1")) }
