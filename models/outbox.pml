/* The outbox lease of lambdas/outbox (Publisher: claimSQL, publish,
 * record with markPublishedSQL and markFailedSQL) for NROWS rows and NPUB
 * publishers.
 *
 * Writers commit the rows in any order (a row's creado_en is its index,
 * the order the claim takes them in). A publisher's round claims up to
 * BATCH rows in one statement (FOR UPDATE SKIP LOCKED: one atomic step
 * here) with a lease of LEASE ticks, puts each row on the bus within its
 * PublishTimeout (PT ticks, below LEASE), then records the verdicts in one
 * transaction that may land at any later time, or never (a crash between
 * publish and mark). A PutEvents call may fail without effect, or take
 * effect with its answer lost (the row is then released as failed and
 * sent again: at least once). A failed row is released with a backoff of
 * BACKOFF ticks. FAILS and CRASHES bound the failures; MaxAttempts (10)
 * exceeds every bound here, so no row is parked.
 *
 * Assumption: a PutEvents call takes effect before its PublishTimeout ends
 * (a call cut by the timeout either did not reach the bus or is a lost
 * answer, both modelled).
 *
 * Safety: two publishers never put the same row on the bus within one
 * lease: when a row is published, no other publisher whose lease window
 * (its claim until the lease ends or its round records) is still open has
 * published that row.
 * Liveness (ltl all_published, with weak fairness): every committed row is
 * put on the bus at least once; none is skipped, whatever the commit order.
 *
 * Mutants: -DMUTANT=1 drops the lease check from the claim
 * (bloqueado_hasta <= now()); -DMUTANT=2 drops the claim-token fence from
 * markFailedSQL (bloqueado_por = $6).
 */

/* What the model takes from the code (models/drift_test.go checks it). */
#define CODE_LEASE_MS 30000            /* code: outbox.Config.Lease (its default) */
#define CODE_PUBLISH_TIMEOUT_MS 15000  /* code: outbox.Config.PublishTimeout (its default) */
/* code-text outbox: AND (bloqueado_hasta IS NULL OR bloqueado_hasta <= now()) */
/* code-text outbox: FOR UPDATE SKIP LOCKED */
/* code-text outbox: WHERE id = ANY($1::text[]::uuid[]) AND publicado_en IS NULL */
/* code-text outbox: WHERE o.id = f.id::uuid AND o.bloqueado_por = $6::uuid AND o.publicado_en IS NULL */

#ifndef NROWS
#define NROWS 3
#endif
#ifndef NPUB
#define NPUB 2
#endif
#ifndef BATCH
#define BATCH 2
#endif
#ifndef LEASE
#define LEASE 2     /* ticks */
#endif
#define PT (LEASE * CODE_PUBLISH_TIMEOUT_MS / CODE_LEASE_MS)  /* PublishTimeout in ticks: below LEASE */
#define BACKOFF 1
#ifndef FAILS
#define FAILS 1
#endif
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

/* the table */
bool committed[NROWS];
bool published[NROWS];  /* publicado_en set */
byte leaseLeft[NROWS];  /* ticks until bloqueado_hasta <= now(); 0: claimable */
byte leaseBy[NROWS];    /* bloqueado_por: the claiming publisher (1..NPUB), 0: none */

/* the world (NROWS and NPUB are at most 3: the macros below name three indices) */
bool onBus[NROWS];      /* PutEvents accepted the row at least once */
byte window[NPUB + 1];  /* ticks left of each publisher's lease window */
byte ptLeft[NPUB + 1];  /* ticks left of each publisher's PublishTimeout */
bool busy[NPUB + 1];    /* in its publish phase */
byte sentMask[NPUB + 1];  /* rows put on the bus in the publisher's open window */
byte fails = FAILS;     /* PutEvents calls that may still fail or time out */
byte crashes = CRASHES;

#define allPublished (onBus[0] && onBus[NROWS - 2] && onBus[NROWS - 1])
#define bit(r) (1 << (r))
#if MUTANT == 1
#define LEASE_OK(r) true
#else
#define LEASE_OK(r) (leaseLeft[r] == 0)
#endif
#if MUTANT == 2
#define FENCE(r) true
#else
#define FENCE(r) (leaseBy[r] == me)
#endif
/* A tick that ends a publish phase's PublishTimeout cuts its call: a
 * failure, charged to FAILS; once FAILS is spent, calls are fast. */
#define CUT(p) (busy[p] && ptLeft[p] == 1 -> 1 : 0)
#if NPUB == 3
#define CUTS (CUT(1) + CUT(2) + CUT(3))
#else
#define CUTS (CUT(1) + CUT(2))
#endif

active proctype clock() {
	byte i;
end:	do
	:: atomic {
		CUTS <= fails ->
		fails = fails - CUTS;
		for (i : 0 .. NROWS - 1) { if :: leaseLeft[i] > 0 -> leaseLeft[i]-- :: else fi }
		for (i : 1 .. NPUB) {
			if :: window[i] > 0 -> window[i]-- :: else fi;
			if :: ptLeft[i] > 0 -> ptLeft[i]-- :: else fi
		}
	   }
	od
}

/* Writers begin in creado_en order (the index) and commit in any order. */
active proctype writers() {
end:	do
	:: atomic { !committed[0] -> committed[0] = true }
	:: atomic { NROWS > 1 && !committed[1] -> committed[1] = true }
	:: atomic { NROWS > 2 && !committed[NROWS - 1] -> committed[NROWS - 1] = true }
	od
}

inline publish(r) {
	for (q : 1 .. NPUB) {
		if
		:: q != me -> assert(!(window[q] > 0 && (sentMask[q] & bit(r))))
		:: else
		fi
	}
	onBus[r] = true;
	sentMask[me] = sentMask[me] | bit(r)
}

proctype publisher(byte me) {
	byte mine, ok, r, n, q;
end:	do
	:: /* claimSQL: one statement, rows in creado_en order, up to BATCH */
		atomic {
			mine = 0; n = 0; ok = 0;
			for (r : 0 .. NROWS - 1) {
				if
				:: n < BATCH && committed[r] && !published[r] && LEASE_OK(r) ->
					leaseLeft[r] = LEASE; leaseBy[r] = me; mine = mine | bit(r); n++
				:: else
				fi
			}
			if :: mine != 0 -> window[me] = LEASE; ptLeft[me] = PT; busy[me] = true :: else fi
		}
		if
		:: mine == 0 -> goto next
		:: else
		fi;
		/* PutEvents, row by row, within PublishTimeout */
		for (r : 0 .. NROWS - 1) {
			if
			:: mine & bit(r) ->
				if
				:: atomic { ptLeft[me] > 0 -> publish(r); ok = ok | bit(r) }
				:: atomic { ptLeft[me] > 0 && fails > 0 -> fails--; publish(r) }  /* accepted, answer lost */
				:: atomic { ptLeft[me] > 0 && fails > 0 -> fails-- }               /* rejected */
				:: ptLeft[me] == 0                                                 /* cut by the timeout */
				:: atomic { crashes > 0 -> crashes--; busy[me] = false; goto dead }
				fi
			:: else
			fi
		}
		busy[me] = false;
		/* record: both UPDATEs in one transaction, landing at any later time */
		if
		:: atomic {
			for (r : 0 .. NROWS - 1) {
				if
				:: (mine & bit(r)) && (ok & bit(r)) && !published[r] ->
					published[r] = true; leaseLeft[r] = 0; leaseBy[r] = 0
				:: (mine & bit(r)) && !(ok & bit(r)) && FENCE(r) && !published[r] ->
					leaseLeft[r] = BACKOFF; leaseBy[r] = 0
				:: else
				fi
			}
			window[me] = 0; ptLeft[me] = 0; sentMask[me] = 0
		   }
		:: atomic { crashes > 0 -> crashes--; goto dead }  /* dies between publish and mark */
		fi;
next:		skip
	od;
dead:	skip
}

init {
	byte i;
	atomic { for (i : 1 .. NPUB) { run publisher(i) } }
}

ltl all_published { <> allPublished }
