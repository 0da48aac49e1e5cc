/* The stock version of lambdas/stock (Store.Apply: applyOnce, plan, begin,
 * finish, undo, clearPending) for one SKU: a totals item (existencias,
 * reservado, version, one pending change per line) and two lines, an
 * order line (pedido#..., reserva then liberacion) and an adjustment
 * (ajuste#..., +3 units).
 *
 * Each worker is one delivery of one movement; deliveries are duplicated
 * (two workers carry the reserva) and run in any order and interleaving,
 * so movements arrive reordered and late. Every DynamoDB call is one
 * atomic step; a worker may crash between any two, leaving its change
 * pending for whoever meets it. A write that succeeded may land again
 * later (LATE such late copies: an SDK retry of a request whose answer was
 * lost). Apply restarts at most ROUNDS times (maxRounds in the code).
 *
 * Safety (the monitor's assertion): in every reachable state the totals equal the ledger of the
 * applied movements, each line counted once in its newest state (the
 * pending change where one has begun and its line does not carry it yet),
 * and disponible never falls below zero.
 *
 * Mutant: -DMUTANT=1 drops the version check from begin's condition.
 */

/* What the model takes from the code (models/drift_test.go checks it). */
mtype:estado = { NONE, RESERVADA, LIBERADA, APLICADO } /* code: stock.EstadoReservada stock.EstadoLiberada stock.EstadoAplicado */
/* code-text stock: attribute_not_exists(#p) AND #v = :v */
/* code-text stock: attribute_not_exists(#p) AND attribute_not_exists(#v) */
/* code-text stock: AND #d >= :need */
/* code-text stock: #p.#c = :c */

#ifndef FULL
#define FULL 1     /* 1: a late liberacion delivery too */
#endif
#ifndef ROUNDS
#define ROUNDS 3
#endif
#ifndef LATE
#define LATE 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

mtype:tipo = { RESERVA, LIBERACION, AJUSTE };
#define PEDIDO 0   /* line pedido#P */
#define AJ 1       /* line ajuste#R */

typedef Change {
	bool on;
	byte cambio;   /* the token of the attempt */
	mtype:estado estado;
	byte cantidad;
	byte secuencia;
	byte leida;    /* the line's secuencia it was computed from */
	short de;      /* delta of existencias */
	short dr       /* delta of reservado */
};
typedef Line {
	bool on;
	mtype:estado estado;
	byte cantidad;
	byte secuencia;
	byte cambio
};

/* the table */
bool exists;
short ex, rs;      /* existencias, reservado (disponible = ex - rs) */
byte version;      /* 0: no version attribute */
Change pend[2];
Line line[2];
/* the network: one late copy of a begin or a finish PutItem */
byte late = LATE;
bool lateOn; bool lateIsBegin; byte lateLine; byte lateVer; Change lateC;

/* the ledger: what the totals must show */
#define CARRIES(l) (line[l].on && line[l].cambio == pend[l].cambio)
#define EFF_ESTADO(l) (pend[l].on && !CARRIES(l) -> pend[l].estado : (line[l].on -> line[l].estado : NONE))
#define EFF_CANT(l) (pend[l].on && !CARRIES(l) -> pend[l].cantidad : line[l].cantidad)
#define LEDGER_RS (EFF_ESTADO(PEDIDO) == RESERVADA -> EFF_CANT(PEDIDO) : 0)
#define LEDGER_EX (EFF_ESTADO(AJ) == APLICADO -> EFF_CANT(AJ) : 0)
#define INV (rs == LEDGER_RS && ex == LEDGER_EX && ex >= rs)

#if MUTANT == 1
#define VERSION_OK(v) true
#else
#define VERSION_OK(v) (version == (v))
#endif

inline copyChange(d, x) {
	d.on = x.on; d.cambio = x.cambio; d.estado = x.estado; d.cantidad = x.cantidad;
	d.secuencia = x.secuencia; d.leida = x.leida; d.de = x.de; d.dr = x.dr
}

/* begin's UpdateItem: deltas, pending change, version + 1, on the version read */
#define BEGIN_COND(l, x, v) (!pend[l].on && VERSION_OK(v) && (x.dr - x.de <= 0 || ex - rs >= x.dr - x.de))
inline applyBegin(l, x, v) {
	exists = true; ex = ex + x.de; rs = rs + x.dr; copyChange(pend[l], x); pend[l].on = true; version = v + 1
}
/* finish's PutItem: only on the line c was computed from */
#define PUT_COND(l, x) ((x.leida > 0 && line[l].on && line[l].secuencia == x.leida) || (x.leida == 0 && !line[l].on))
inline applyPut(l, x) {
	line[l].on = true; line[l].estado = x.estado; line[l].cantidad = x.cantidad;
	line[l].secuencia = x.secuencia; line[l].cambio = x.cambio
}
inline maybeLate(isBegin, l, x, v) {
	if
	:: late > 0 -> late--; lateOn = true; lateIsBegin = isBegin; lateLine = l; lateVer = v; copyChange(lateC, x)
	:: true
	fi
}
inline crashpoint() { if :: true :: goto crashed fi }

/* finish(x): the PutItem, then clearPending; or undo and restart */
inline finish(l, x) {
	atomic {
		if
		:: PUT_COND(l, x) -> applyPut(l, x); maybeLate(false, l, x, 0); carries = true
		:: else -> carries = false
		fi
	}
	crashpoint();
	if
	:: !carries -> atomic { carries = line[l].on && line[l].cambio == x.cambio }; crashpoint()  /* GetItem */
	:: else
	fi;
	atomic {
		if
		:: carries && pend[l].on && pend[l].cambio == x.cambio -> pend[l].on = false   /* clearPending */
		:: !carries && pend[l].on && pend[l].cambio == x.cambio ->                    /* undo */
			ex = ex - x.de; rs = rs - x.dr; pend[l].on = false
		:: else
		fi
	}
}

proctype worker(byte me; mtype:tipo t; byte l; byte qty; byte seq) {
	byte round;
	bool tExists, carries;
	short tDisp;
	byte tVer;
	Change p, c;
	bool curOn; mtype:estado curEstado; byte curCant, curSeq;
restart:
	round++;
	if
	:: round > ROUNDS -> goto crashed  /* ErrConflict: transient, redelivered later */
	:: else
	fi;
	/* getTotals */
	atomic {
		tExists = exists; tDisp = ex - rs; tVer = version; copyChange(p, pend[l])
	}
	crashpoint();
	if
	:: p.on -> finish(l, p); crashpoint(); goto restart  /* a pending change of this line: finish it first */
	:: else
	fi;
	/* getLine */
	atomic {
		curOn = line[l].on; curEstado = line[l].estado; curCant = line[l].cantidad; curSeq = line[l].secuencia
	}
	crashpoint();
	if
	:: curOn && (curSeq >= seq || t == AJUSTE) -> goto finished  /* Skipped */
	:: else
	fi;
	/* plan */
	c.on = true; c.cambio = me * 8 + round; c.cantidad = qty; c.secuencia = seq;
	c.leida = (curOn -> curSeq : 0); c.de = 0; c.dr = 0;
	if
	:: t == RESERVA -> c.estado = RESERVADA; c.dr = qty - (curOn && curEstado == RESERVADA -> curCant : 0)
	:: t == LIBERACION -> c.estado = LIBERADA; c.dr = 0 - (curOn && curEstado == RESERVADA -> curCant : 0)
	:: t == AJUSTE -> c.estado = APLICADO; c.de = qty
	fi;
	if
	:: c.dr - c.de > 0 && (!tExists || tDisp < c.dr - c.de) -> goto finished  /* ErrNegativeStock: to the DLQ */
	:: else
	fi;
	/* begin */
	atomic {
		if
		:: BEGIN_COND(l, c, tVer) -> applyBegin(l, c, tVer); maybeLate(true, l, c, tVer)
		:: else -> goto restart  /* the totals moved: read them again */
		fi
	}
	crashpoint();
	finish(l, c);
	if
	:: carries -> goto finished
	:: else -> crashpoint(); goto restart
	fi;
crashed:
finished:
	skip
}

/* A late copy of a write lands once more, at any time after the original. */
active proctype network() {
end:	atomic {
		lateOn ->
		if
		:: lateIsBegin && BEGIN_COND(lateLine, lateC, lateVer) -> applyBegin(lateLine, lateC, lateVer)
		:: !lateIsBegin && PUT_COND(lateLine, lateC) -> applyPut(lateLine, lateC)
		:: else
		fi;
		lateOn = false
	}
}

init {
	atomic {
		run worker(1, AJUSTE, AJ, 3, 1);
		run worker(2, RESERVA, PEDIDO, 2, 1);
		run worker(3, RESERVA, PEDIDO, 2, 1);  /* the duplicate */
#if FULL
		run worker(4, LIBERACION, PEDIDO, 0, 2);
#endif
	}
}

/* The invariant, checked in every reachable state. */
active proctype monitor() {
end:	atomic { !INV -> assert(false) }
}
