package cost

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

//go:embed prices-eu-west-1.json
var defaultPrices []byte

// ErrInvalid is wrapped by every error about a malformed price table or
// usage model.
var ErrInvalid = errors.New("cost: invalid input")

// Price is one entry of the price table: USD per Per units.
type Price struct {
	Key     string  `json:"key"`
	Service string  `json:"service"`
	USD     float64 `json:"usd"`
	Per     float64 `json:"per"`
	Unit    string  `json:"unit"`
	Note    string  `json:"note,omitempty"`
	Source  string  `json:"source"`
	// Basis says how the figure was obtained: read, list, derived or
	// us-east-1 (the table's "about" defines them).
	Basis string `json:"basis"`
}

// PerUnit is the price of one unit.
func (p Price) PerUnit() float64 { return p.USD / p.Per }

// Prices is a dated price table of one region.
type Prices struct {
	Region   string `json:"region"`
	Currency string `json:"currency"`
	Recorded string `json:"recorded"`
	About    string `json:"about"`
	// List is in the order the report lists the services: the order
	// flow's messaging first, then compute, data, network, security and
	// monitoring.
	List []Price `json:"prices"`
	// Free are the resource types that cost nothing by themselves, each
	// with why.
	Free  map[string]string `json:"free"`
	byKey map[string]Price
}

var (
	datePattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	bases       = map[string]bool{"read": true, "list": true, "derived": true, "us-east-1": true}
)

// DefaultPrices is the committed table (prices-eu-west-1.json).
func DefaultPrices() (*Prices, error) { return ParsePrices(defaultPrices) }

// LoadPrices reads a price table from a file.
func LoadPrices(path string) (*Prices, error) { return load(path, ParsePrices) }

// load reads a file and parses it, naming the file in a parse error.
func load[T any](path string, parse func([]byte) (*T, error)) (*T, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v, err := parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// ParsePrices parses and validates a price table: a region, a recorded
// date, and entries with a unique key, a positive Per, a non-negative price,
// a source URL and a known basis. Every problem is reported.
func ParsePrices(raw []byte) (*Prices, error) {
	var p Prices
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: price table: %v", ErrInvalid, err)
	}
	var errs []error
	bad := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...))
	}
	if p.Region == "" || p.Currency != "USD" {
		bad("price table: region %q and currency %q (want a region and USD)", p.Region, p.Currency)
	}
	if !datePattern.MatchString(p.Recorded) {
		bad("price table: recorded date %q is not YYYY-MM-DD", p.Recorded)
	}
	p.byKey = map[string]Price{}
	for _, e := range p.List {
		switch {
		case e.Key == "":
			bad("a price without a key")
			continue
		case p.byKey[e.Key].Key != "":
			bad("price %s listed twice", e.Key)
		case e.Per <= 0 || e.USD < 0:
			bad("price %s: %v USD per %v", e.Key, e.USD, e.Per)
		case !strings.HasPrefix(e.Source, "https://"):
			bad("price %s: source %q is not an https URL", e.Key, e.Source)
		case !bases[e.Basis]:
			bad("price %s: basis %q (want read, list, derived or us-east-1)", e.Key, e.Basis)
		case e.Basis == "derived" && e.Note == "":
			bad("price %s: a derived price must say how in its note", e.Key)
		case e.Service == "" || e.Unit == "":
			bad("price %s: service and unit are required", e.Key)
		}
		p.byKey[e.Key] = e
	}
	for typ, why := range p.Free {
		if why == "" {
			bad("free type %s: say why it costs nothing", typ)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &p, nil
}

// Get returns the price of key; a key the table lacks is an error naming it.
func (p *Prices) Get(key string) (Price, error) {
	e, ok := p.byKey[key]
	if !ok {
		return Price{}, fmt.Errorf("%w: the price table (%s, %s) has no price %q", ErrInvalid, p.Region, p.Recorded, key)
	}
	return e, nil
}
