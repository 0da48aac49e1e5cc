package main

import (
	"slices"
	"testing"
)

func TestCodeChanges(t *testing.T) {
	committed := []byte("# header\n" +
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa  lambdas/cobro\n" +
		"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb  lambdas/preparar-pedido\n" +
		"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc  lambdas/viejo\n")
	now := map[string]string{
		"lambdas/cobro":           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"lambdas/preparar-pedido": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
		"lambdas/nuevo":           "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
	}
	want := []string{
		"[+] lambdas/nuevo (new function) eeeeeeeeeeee",
		"[-] lambdas/viejo (function removed)",
		"[~] lambdas/preparar-pedido code changed bbbbbbbbbbbb -> dddddddddddd",
	}
	if got := codeChanges(committed, now); !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
