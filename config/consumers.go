package config

import (
	"net/mail"
)

// Consumers configures the queue consumers' dependencies in one
// environment (constructs/queues). The URLs and the sender are
// placeholders under .example until the real endpoints are known; the
// in-flight limits are what each dependency is assumed to accept from us
// (docs/design.md#consumer-ceilings derives every consumer's ceiling from
// them).
type Consumers struct {
	// AlmacenURL is the warehouse API's https base URL (order preparation).
	AlmacenURL string
	// AlmacenMaxInFlight is how many requests at once the warehouse takes
	// from the order-preparation consumer.
	AlmacenMaxInFlight float64
	// ERPURL is the ERP API's https base URL (the ERP notice consumer).
	ERPURL string
	// ERPMaxInFlight is how many notices at once the ERP takes from the
	// consumer (the ERP's API destination, config ERPRateLimitPerSecond
	// where it exists, shares the ERP: keep room for it).
	ERPMaxInFlight float64
	// CorreoRemitente is the From address of the confirmation e-mails; its
	// domain is the environment's SES identity, verified outside this app
	// (DNS records of the domain).
	CorreoRemitente string
	// CorreoSecundarioURL is the secondary e-mail provider's https base URL.
	CorreoSecundarioURL string
	// CorreoMaxInFlight is how many e-mails are sent at once (SES's sending
	// rate of the account, ~14/s by default in production).
	CorreoMaxInFlight float64
}

var consumers = map[string]Consumers{
	"dev": {
		AlmacenURL: "https://almacen-dev.mercadofresco.example", AlmacenMaxInFlight: 4,
		ERPURL: "https://erp-dev.mercadofresco.example", ERPMaxInFlight: 2,
		CorreoRemitente: "pedidos@dev.mercadofresco.example", CorreoSecundarioURL: "https://sandbox.correo-secundario.example", CorreoMaxInFlight: 2,
	},
	"staging": {
		AlmacenURL: "https://almacen-staging.mercadofresco.example", AlmacenMaxInFlight: 8,
		ERPURL: "https://erp-staging.mercadofresco.example", ERPMaxInFlight: 2,
		CorreoRemitente: "pedidos@staging.mercadofresco.example", CorreoSecundarioURL: "https://sandbox.correo-secundario.example", CorreoMaxInFlight: 4,
	},
	"prod": {
		// 20 at once: at the 30 s read timeout that is still 2,400
		// orders/h, above the 900/h Friday burst.
		AlmacenURL: "https://almacen.mercadofresco.example", AlmacenMaxInFlight: 20,
		ERPURL: "https://erp.mercadofresco.example", ERPMaxInFlight: 4,
		CorreoRemitente: "pedidos@mercadofresco.example", CorreoSecundarioURL: "https://api.correo-secundario.example", CorreoMaxInFlight: 10,
	},
}

func (c Consumers) check(p *problems) {
	p.https("Consumers.AlmacenURL", c.AlmacenURL)
	p.https("Consumers.ERPURL", c.ERPURL)
	p.https("Consumers.CorreoSecundarioURL", c.CorreoSecundarioURL)
	for name, n := range map[string]float64{"AlmacenMaxInFlight": c.AlmacenMaxInFlight, "ERPMaxInFlight": c.ERPMaxInFlight, "CorreoMaxInFlight": c.CorreoMaxInFlight} {
		p.If(n < 2 || n != float64(int(n)), "Consumers.%s %v must be a whole number of at least 2 (two invocations of one record)", name, n)
	}
	a, err := mail.ParseAddress(c.CorreoRemitente)
	p.If(err != nil || *a != mail.Address{Address: c.CorreoRemitente}, "Consumers.CorreoRemitente %q is not a bare e-mail address", c.CorreoRemitente)
}
