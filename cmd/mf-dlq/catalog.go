package main

import "github.com/mercadofresco/integration/lambdas/queuenames"

func findCatalog(name string) (queuenames.Queue, bool, bool) { return queuenames.Find(name) }
