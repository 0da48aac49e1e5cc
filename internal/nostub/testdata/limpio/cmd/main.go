// Command cmd is a fixture of the nostub test: a main with nothing to find
// (a variable named like "stubborn" is not a stub).
package main

import "fmt"

var stubbornness = 3

func main() { fmt.Println("pedido", stubbornness) }
