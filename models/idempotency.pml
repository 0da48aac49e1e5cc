/* The idempotency claim of lambdas/idempotency (Do, tryClaim, complete,
 * fail, release, record.expired) for one key and NW deliveries of it.
 *
 * Each worker is one invocation of Do: it starts at any time, lives
 * DEADLINE ticks, claims the key with the conditional PutItem, runs the
 * handler (whose side effect may happen with its answer lost), and sends
 * its outcome (complete, fail or release), fenced by its owner token.
 * It may crash at any step; a write it sent may land at any later time,
 * after its deadline too (the network, the SDK). The record's expira_en
 * (Expiry, a day at least) is not modelled: it is far beyond every lock.
 *
 * Assumption (the code's rule, Store.lockExpiry): the lock ends at
 * min(now + LockWindow, the invocation's deadline), and LockWindow is above
 * the handler's worst case, so the lock ends exactly at the owner's
 * deadline: never after it (a dead owner's key frees when its invocation
 * would have ended), and the owner acts (runs the handler, sends a write)
 * only while its lock holds. Only writes already sent may land later.
 *
 * Safety: the effect happens at most once per key, except after an effect
 * whose outcome the store never recorded (its answer was lost, its owner
 * crashed, or its outcome was fenced out after its lock ended: the
 * modelled uncertain outcome, closed only by the downstream's own
 * idempotency with the forwarded key); once an outcome is recorded no
 * effect happens again, and a duplicate gets the stored result.
 * Liveness (ltl orphan_claimable): a key left EN_CURSO by a crashed worker
 * becomes claimable again, once its lock expires.
 *
 * Mutants: -DMUTANT=1 drops the owner fence (ownerCondition) from complete,
 * fail and release; -DMUTANT=2 drops the expired-lock clause from the claim
 * condition.
 */

/* What the model takes from the code (models/drift_test.go checks it). */
mtype:estado = { ABSENT, EN_CURSO, COMPLETADO, FALLIDO } /* code: idempotency.StatusInProgress idempotency.StatusCompleted idempotency.StatusFailed */
/* code-text idempotency: attribute_not_exists(#k) OR #exp < :ahora_s OR (#est = :en_curso AND #cb < :ahora_ms) */
/* code-text idempotency: #prop = :prop AND #est = :en_curso */

#ifndef NW
#define NW 3        /* deliveries of the key (workers) */
#endif
#ifndef DEADLINE
#define DEADLINE 2  /* ticks an invocation lives; its lock ends with it */
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

mtype:write = { COMPLETE, FAIL, RELEASE };

/* the record */
mtype:estado st = ABSENT;
byte prop;          /* propietario: the owner's token (worker id, 1..NW) */
byte lockLeft;      /* ticks caduca_bloqueo still holds; 0: the lock has ended */
byte resultado;     /* COMPLETADO: the token of the effect whose result it stores */

/* the world */
byte left[NW + 1];      /* ticks each invocation still lives */
byte live;              /* invocations with ticks left */
bool effected[NW + 1];  /* the worker's side effect happened */
bool crashed[NW + 1];   /* the worker died holding, or sent nothing after its claim */
byte effects;           /* side effects performed */
byte uncertain;         /* effects whose outcome the store never recorded */
bool settled;           /* an effect's outcome is recorded */
byte done;              /* workers finished */

#define claimable (st == ABSENT || (st == EN_CURSO && lockLeft == 0))
#define orphan (st == EN_CURSO && crashed[prop])

#if MUTANT == 2
#define CLAIM_COND (st == ABSENT)
#else
#define CLAIM_COND claimable
#endif
#if MUTANT == 1
#define FENCE true
#else
#define FENCE (st == EN_CURSO && prop == me)
#endif

inline effect() {
	assert(!settled);  /* no effect after a recorded one */
	effects++;
	effected[me] = true
}

/* The clock: one tick ages every invocation and the lock. */
active proctype clock() {
	byte i;
end:	do
	:: atomic {
		(lockLeft > 0 || live > 0) ->
		if :: lockLeft > 0 -> lockLeft-- :: else fi;
		for (i : 1 .. NW) {
			if
			:: left[i] > 0 -> left[i]--; if :: left[i] == 0 -> live-- :: else fi
			:: else
			fi
		}
	   }
	od
}

proctype worker(byte me) {
	mtype:write w;
	bool lost;  /* the handler's answer was lost: its effect is uncertain */

	atomic { left[me] = DEADLINE; live++ }  /* the invocation starts (any time) */
	/* the claim: conditional PutItem, ALL_OLD on a failed condition */
	atomic {
		if
		:: left[me] > 0 && CLAIM_COND ->
			st = EN_CURSO; prop = me; lockLeft = left[me]
		:: left[me] > 0 && !CLAIM_COND ->
			if
			:: st == COMPLETADO -> assert(resultado != 0 && effected[resultado])  /* the stored result */
			:: else             /* FALLIDO: the stored error; EN_CURSO: ErrInProgress, redelivered later */
			fi;
			goto finished
		:: left[me] == 0 -> goto finished  /* timed out before the claim */
		fi
	}
	/* the handler, while the invocation lives */
	if
	:: atomic { left[me] > 0 -> effect(); w = COMPLETE }                /* success */
	:: atomic { left[me] > 0 -> effect(); lost = true; w = RELEASE }    /* effect done, answer lost: a transient error */
	:: left[me] > 0 -> w = RELEASE                                      /* transient error, no effect */
	:: left[me] > 0 -> w = FAIL                                         /* permanent error (a declined card), no effect */
	:: goto crash                                                       /* dies (or times out) in the handler */
	fi;
	/* the outcome write: sent while the invocation lives, lands at any later time */
	if
	:: left[me] > 0
	:: goto crash
	fi;
	atomic {
		if
		:: FENCE ->
			if
			:: w == COMPLETE -> st = COMPLETADO; resultado = me; settled = true
			:: w == FAIL -> st = FALLIDO
			:: w == RELEASE -> st = ABSENT
			fi;
			prop = 0; lockLeft = 0;
			if :: lost -> uncertain++ :: else fi
		:: else ->  /* ErrLockLost: the lock ended and another owner took the key */
			if :: effected[me] -> uncertain++ :: else fi
		fi
	}
	goto finished;
crash:
	atomic { crashed[me] = true; if :: effected[me] -> uncertain++ :: else fi }
finished:
	atomic {
		done++;
		if :: done == NW -> assert(effects <= 1 + uncertain) :: else fi
	}
}

init {
	byte i;
	atomic { for (i : 1 .. NW) { run worker(i) } }
}

ltl orphan_claimable { [] (orphan -> <> CLAIM_COND) }
