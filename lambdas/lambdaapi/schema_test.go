package lambdaapi

import (
	"errors"
	"regexp"
	"testing"
)

func TestDBRolesValidate(t *testing.T) {
	ok := DefaultDBRoles()
	tests := []struct {
		name string
		mod  func(*DBRoles)
		bad  bool
	}{
		{"defaults", func(*DBRoles) {}, false},
		{"empty", func(r *DBRoles) { r.Writer = "" }, true},
		{"upper case", func(r *DBRoles) { r.Writer = "Tienda" }, true},
		{"quote", func(r *DBRoles) { r.Writer = `x"; DROP ROLE y; --` }, true},
		{"leading digit", func(r *DBRoles) { r.Cleanup = "1limpieza" }, true},
		{"too long", func(r *DBRoles) { r.Cleanup = string(make([]byte, 64)) }, true},
		{"reserved pg_", func(r *DBRoles) { r.Owner = "pg_monitor" }, true},
		{"reserved rds", func(r *DBRoles) { r.Owner = "rds_iam" }, true},
		{"shared", func(r *DBRoles) { r.Cleanup = r.Publisher }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.mod(&r)
			err := r.Validate()
			if tc.bad != errors.Is(err, ErrInvalidDBRoles) {
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
