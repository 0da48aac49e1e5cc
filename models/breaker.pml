/* The shared breaker of lambdas/breaker (Breaker.Allow, Call.Done,
 * withStore; the Lua scripts acquireScript, recordScript, settleScript of
 * RedisStore) for one circuit and NI instances.
 *
 * The store (Valkey) holds s, f, OpenUntil, ProbeUntil and the probe's
 * token; each script is one atomic step. It may go down and come back
 * (DOWNS outages of any length). Each instance loops: Allow (from its
 * cached state while it is at most MAXSTALE ticks old, else Acquire), the
 * call (which fails or not), Done (Record, or Settle for the probe). A
 * store operation that fails marks the store down for RETRY ticks and
 * drops the cache. Times are ticks: the model keeps the order of the
 * code's durations (MaxStaleness < OpenPeriod < ProbeLease), not their
 * ratios, and THRESHOLD consecutive failures stand for FailureThreshold.
 *
 * Assumption (Config.ProbeLease: longer than the protected call's worst
 * case): a call lasts at most CALLMAX ticks, CALLMAX < PROBE_LEASE.
 *
 * Safety: while the circuit is half-open at most one probe is in flight
 * (a probe is granted only when no other probe call runs), and a probe
 * ends within its lease (both asserted).
 * Liveness (weak fairness): fails_open: while the store is down an
 * instance allows calls again (a refusal can only come from a store answer
 * or a cached one at most MAXSTALE ticks old: that is how the model is
 * written, not a checked property; fails_open is what is checked);
 * stale_cache: a cached state that holds the circuit open or half-open
 * while the store has it closed is dropped.
 *
 * Mutant: -DMUTANT=1 drops the lease check from acquireScript (a
 * half-open circuit grants a new probe before now >= ProbeUntil).
 */

/* What the model takes from the code (models/drift_test.go checks it). */
#define CLOSED 0     /* code: breaker.Closed */
#define OPEN 1       /* code: breaker.Open */
#define HALF_OPEN 2  /* code: breaker.HalfOpen */
#define CODE_OPEN_PERIOD_MS 30000   /* code: breaker.DefaultOpenPeriod */
#define CODE_PROBE_LEASE_MS 45000   /* code: breaker.DefaultProbeLease */
#define CODE_MAX_STALENESS_MS 1000  /* code: breaker.DefaultMaxStaleness */
#define CODE_STORE_RETRY_MS 1000    /* code: breaker.DefaultStoreRetryInterval */
/* code-text breaker: if (s == 1 and now >= ou) or (s == 2 and now >= pu) then */
/* code-text breaker: if s ~= 2 or redis.call('HGET', KEYS[1], 'pt') ~= token then */
/* code-text breaker: if f >= threshold then */

#ifndef NI
#define NI 2
#endif
#ifndef MAXSTALE
#define MAXSTALE 1
#define OPEN_PERIOD 2
#define PROBE_LEASE 3
#define CALLMAX 2
#endif
#define RETRY 1
#ifndef THRESHOLD
#define THRESHOLD 2
#endif
#ifndef DOWNS
#define DOWNS 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

/* the store */
bool up = true;
byte s = CLOSED;
byte f;
byte ouLeft;  /* ticks until now >= OpenUntil */
byte puLeft;  /* ticks until now >= ProbeUntil */
byte pt;      /* the probe's token: the instance (1..NI), 0: none */
byte downs = DOWNS;

/* the instances (index 0 unused) */
bool have[NI + 1];   /* haveCache */
byte age[NI + 1];    /* ticks since cachedAt, saturating at MAXSTALE + 1 */
byte cs[NI + 1];     /* cached state */
byte cou[NI + 1];    /* cached OpenUntil, as ticks left */
byte cpu[NI + 1];    /* cached ProbeUntil, as ticks left */
byte downLeft[NI + 1];  /* storeDownUntil, as ticks left */
bool probing[NI + 1];   /* a probe call in flight */
byte callLeft[NI + 1];  /* ticks the call in flight may still last */
byte leaseLeft[NI + 1]; /* ticks left of the lease of the instance's probe */
bool allowedLast[NI + 1]; /* the instance's last Allow allowed the call */

#define fresh(i) (have[i] && age[i] <= MAXSTALE)
#define stale(i) (have[i] && (cs[i] == OPEN && cou[i] > 0 || cs[i] == HALF_OPEN && cpu[i] > 0) && s == CLOSED)
#if MUTANT == 1
#define PROBE_DUE ((s == OPEN && ouLeft == 0) || s == HALF_OPEN)
#else
#define PROBE_DUE ((s == OPEN && ouLeft == 0) || (s == HALF_OPEN && puLeft == 0))
#endif

inline dec(x) { if :: x > 0 -> x-- :: else fi }

/* The clock; a call ends within CALLMAX ticks, so no tick passes a call
 * whose time is up. */
active proctype clock() {
	byte i;
end:	do
	:: atomic {
		(callLeft[1] > 0 || !probing[1]) && (callLeft[NI] > 0 || !probing[NI])
#if NI == 3
		&& (callLeft[2] > 0 || !probing[2])
#endif
		->
		dec(ouLeft); dec(puLeft);
		for (i : 1 .. NI) {
			if :: age[i] <= MAXSTALE -> age[i]++ :: else fi;
			dec(cou[i]); dec(cpu[i]); dec(downLeft[i]); dec(callLeft[i]); dec(leaseLeft[i])
		}
	   }
	od
}

/* Valkey goes down and comes back, DOWNS times. */
active proctype valkey() {
end:	do
	:: atomic { up && downs > 0 -> up = false; downs-- }
	:: atomic { !up -> up = true }
	od
}

inline cache(i) { have[i] = true; age[i] = 0; cs[i] = s; cou[i] = ouLeft; cpu[i] = puLeft }
inline storeFailed(i) { downLeft[i] = RETRY; have[i] = false }

proctype instance(byte me) {
	bool probe, failed, failOpen;
	byte j;
end:	do
	:: /* Allow */
		atomic {
			probe = false; failOpen = false;
			if
			:: downLeft[me] > 0 -> allowedLast[me] = true; failOpen = true  /* fail open */
			:: downLeft[me] == 0 && fresh(me) && cs[me] == CLOSED -> allowedLast[me] = true
			:: downLeft[me] == 0 && fresh(me) && (cs[me] == OPEN && cou[me] > 0 || cs[me] == HALF_OPEN && cpu[me] > 0) ->
				allowedLast[me] = false                                   /* refused from a fresh cache */
			:: else ->
				if
				:: !up -> storeFailed(me); allowedLast[me] = true; failOpen = true  /* fail open */
				:: up ->
					if
					:: PROBE_DUE ->
						for (j : 1 .. NI) { assert(!probing[j]) }         /* one probe in flight */
						s = HALF_OPEN; puLeft = PROBE_LEASE; pt = me; probe = true
					:: else
					fi;
					cache(me);
					if :: probe -> cs[me] = HALF_OPEN :: else fi;
					allowedLast[me] = probe || s == CLOSED
				fi
			fi;
			if
			:: allowedLast[me] ->
				callLeft[me] = CALLMAX;
				if :: probe -> probing[me] = true; leaseLeft[me] = PROBE_LEASE :: else fi
			:: else
			fi
		}
		if
		:: !allowedLast[me] -> goto next
		:: else
		fi;
		/* the call ends, failed or not, within CALLMAX ticks */
		atomic {
			if :: failed = true :: failed = false fi;
			if
			:: probe -> assert(leaseLeft[me] > 0); probing[me] = false  /* ends within its lease */
			:: else
			fi;
			callLeft[me] = 0
		}
		/* Done: Record or Settle; nothing for a fail-open call */
		atomic {
			if
			:: failOpen
			:: !failOpen && !up -> storeFailed(me)
			:: !failOpen && up && probe ->
				if
				:: s == HALF_OPEN && pt == me ->
					if
					:: failed -> s = OPEN; ouLeft = OPEN_PERIOD; puLeft = 0
					:: !failed -> s = CLOSED; f = 0; puLeft = 0
					fi;
					pt = 0
				:: else
				fi;
				cache(me)
			:: !failOpen && up && !probe ->
				if
				:: s == CLOSED && failed ->
					f++;
					if :: f >= THRESHOLD -> s = OPEN; ouLeft = OPEN_PERIOD; f = 0 :: else fi
				:: s == CLOSED && !failed -> f = 0
				:: else
				fi;
				cache(me)
			fi
		}
next:		skip
	od
}

init {
	byte i;
	assert(MAXSTALE < OPEN_PERIOD && OPEN_PERIOD < PROBE_LEASE && CALLMAX < PROBE_LEASE);
	atomic { for (i : 1 .. NI) { run instance(i) } }
}

ltl fails_open { [] (!up -> <> (up || allowedLast[1])) }
ltl stale_cache { [] (stale(1) -> <> !stale(1)) }
