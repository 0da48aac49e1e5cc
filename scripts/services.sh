#!/usr/bin/env bash
# Starts the local services the tests use, if they are not already up:
# PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379, with the
# machine's own tools (pg_ctlcluster, redis-server).
set -euo pipefail

wait_for() { # name, command...
  local name=$1; shift
  for _ in $(seq 1 60); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "services: $name did not come up" >&2
  return 1
}

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
  wait_for PostgreSQL pg_isready -q -h 127.0.0.1 -p 5432
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  echo "services: starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  wait_for Redis redis-cli -h 127.0.0.1 -p 6379 ping
fi
