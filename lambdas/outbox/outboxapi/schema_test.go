package outboxapi

import (
	"errors"
	"regexp"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := DefaultRoles()
	tests := []struct {
		name string
		mod  func(*Roles)
		bad  bool
	}{
		{"defaults", func(*Roles) {}, false},
		{"empty", func(r *Roles) { r.Writer = "" }, true},
		{"upper case", func(r *Roles) { r.Writer = "Tienda" }, true},
		{"quote", func(r *Roles) { r.Writer = `x"; DROP ROLE y; --` }, true},
		{"leading digit", func(r *Roles) { r.Cleanup = "1limpieza" }, true},
		{"too long", func(r *Roles) { r.Cleanup = string(make([]byte, 64)) }, true},
		{"reserved pg_", func(r *Roles) { r.Owner = "pg_monitor" }, true},
		{"reserved rds", func(r *Roles) { r.Owner = "rds_iam" }, true},
		{"shared", func(r *Roles) { r.Cleanup = r.Publisher }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.mod(&r)
			err := r.Validate()
			if tc.bad != errors.Is(err, ErrInvalidRoles) {
				t.Fatalf("Validate(%+v) = %v", r, err)
			}
		})
	}
}

func TestHashCoversEveryMigration(t *testing.T) {
	h := SchemaHash()
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(h) || h != SchemaHash() {
		t.Fatalf("Hash() = %q, want a stable SHA-256", h)
	}
	entries, err := Migrations.ReadDir(MigrationsDir)
	if err != nil || len(entries) < 5 {
		t.Fatalf("embedded migrations: %d, %v", len(entries), err)
	}
}
