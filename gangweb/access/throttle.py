"""Back-off against guessing (docs/design.md, "Access: guessing"): wrong passwords per account and per
source address, TokenReviews of tokens that do not authenticate per source address.

Each counted key keeps ``n`` (attempts charged and not refunded), ``f`` (attempts that failed) and ``t``
(when it was last charged). The first ``free`` charges cost nothing; from then on the next attempt must
wait ``min(GANGWEB_BACKOFF_MAX_SECONDS, 2 ** (n - free))`` seconds after ``t``, and the key is forgotten
``GANGWEB_BACKOFF_FORGET_SECONDS`` after ``t``. An account's wait holds only attempts from a source that
has failed before: guessing at an account slows the guessers, never its owner on a clean address. The
check and the charge are one atomic step taken before the work they guard (the password hash, the
TokenReview), so parallel attempts cannot all slip through one opening, and a refused attempt costs no
hash; an attempt that succeeds is refunded. The keys live in Redis when ``REDIS_URL`` is set (every web
replica counts together), else, or while Redis does not answer, in this process.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import math
import threading
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from gangweb.access.ttlcache import TTLCache
from scheduler import redisclient

logger = logging.getLogger(__name__)

PREFIX = "gangweb:backoff:"
LOCAL_KEYS = 100_000
UNKNOWN_SOURCE = "unknown"

# KEYS[1] the source, KEYS[2] (optional) the account, whose wait holds only once the source has failed.
# ARGV: now, max wait, forget (seconds), the source's free charges, the account's. The same rule as _charge.
_CHARGE = """
local now, cap, forget = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local function wait(key, free)
  local r = redis.call('HMGET', key, 'n', 't')
  local n = tonumber(r[1]) or 0
  if n < free then return 0 end
  return (tonumber(r[2]) or 0) + math.min(cap, 2 ^ (n - free)) - now
end
local w = wait(KEYS[1], tonumber(ARGV[4]))
if KEYS[2] and (tonumber(redis.call('HGET', KEYS[1], 'f')) or 0) > 0 then
  w = math.max(w, wait(KEYS[2], tonumber(ARGV[5])))
end
if w > 0 then return tostring(w) end
for _, key in ipairs(KEYS) do
  redis.call('HINCRBY', key, 'n', 1)
  redis.call('HSET', key, 't', ARGV[1])
  redis.call('PEXPIRE', key, math.floor(forget * 1000))
end
return '0'
"""
_REFUND = """
for _, key in ipairs(KEYS) do
  if (tonumber(redis.call('HGET', key, 'n')) or 0) > 0 then redis.call('HINCRBY', key, 'n', -1) end
end
"""
_FAIL = """
redis.call('HINCRBY', KEYS[1], 'f', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[1])
"""


class Refused(Exception):
    """Too many failed attempts: the next one is allowed in ``wait`` seconds."""

    def __init__(self, wait: float) -> None:
        self.wait = wait
        super().__init__(f"too many failed attempts; try again in {self.retry_after} s")

    @property
    def retry_after(self) -> int:
        """Whole seconds, at least one (the ``Retry-After`` header)."""
        return max(1, math.ceil(self.wait))


def _wait(record: list[float], free: int, cap: float, now: float) -> float:
    n, _, t = record
    if n < free:
        return 0.0
    return t + min(cap, 2.0 ** min(n - free, 64)) - now


class _Local:
    """The counts of this process: a bounded cache of ``[n, f, t]`` records."""

    def __init__(self) -> None:
        self._records = TTLCache(LOCAL_KEYS)
        self._lock = threading.Lock()

    def _get(self, key: str) -> list[float]:
        hit, record = self._records.get(key)
        return record if hit else [0, 0, 0.0]

    def charge(
        self, keys: tuple[str, ...], frees: tuple[int, ...], now: float, cap: float, forget: float
    ) -> float:
        with self._lock:
            records = [self._get(key) for key in keys]
            wait = _wait(records[0], frees[0], cap, now)
            if len(keys) > 1 and records[0][1] > 0:
                wait = max(wait, _wait(records[1], frees[1], cap, now))
            if wait > 0:
                return wait
            for key, record in zip(keys, records, strict=True):
                record[0] += 1
                record[2] = now
                self._records.put(key, record, forget)
            return 0.0

    def refund(self, keys: tuple[str, ...]) -> None:
        with self._lock:
            for key in keys:
                hit, record = self._records.get(key)
                if hit and record[0] > 0:
                    record[0] -= 1

    def fail(self, key: str, forget: float) -> None:
        with self._lock:
            record = self._get(key)
            record[1] += 1
            self._records.put(key, record, forget)

    def clear(self) -> None:
        self._records.clear()


class _Redis:
    """The counts in Redis, shared by every process; falls back to this process's while Redis is down."""

    def __init__(self, local: _Local) -> None:
        self._local = local
        self.failing = False
        self._written = True  # since the last clear (none yet: whatever an earlier process left)

    def _call(self, source: str, keys: tuple[str, ...], args: list, fallback):
        try:
            script = redisclient.shared_script(settings.REDIS_URL, source)
            self._written = True
            result = script(keys=list(keys), args=args)
        except Exception as exc:
            if not self.failing:
                logger.warning("guessing counts fall back to this process: Redis: %s", str(exc)[:300])
            self.failing = True
            return fallback()
        self.failing = False
        return result

    def charge(
        self, keys: tuple[str, ...], frees: tuple[int, ...], now: float, cap: float, forget: float
    ) -> float:
        args = [repr(now), cap, forget, frees[0], frees[-1]]
        answer = self._call(_CHARGE, keys, args, lambda: self._local.charge(keys, frees, now, cap, forget))
        return float(answer)

    def refund(self, keys: tuple[str, ...]) -> None:
        self._call(_REFUND, keys, [], lambda: self._local.refund(keys))

    def fail(self, key: str, forget: float) -> None:
        self._call(_FAIL, (key,), [int(forget * 1000)], lambda: self._local.fail(key, forget))

    def clear(self) -> None:
        self._local.clear()
        if settings.REDIS_URL and self._written:
            import redis

            client = redisclient.shared(settings.REDIS_URL)
            try:
                keys = list(client.scan_iter(match=PREFIX + "*", count=1000))
                if keys:
                    client.delete(*keys)
            except redis.RedisError as exc:
                logger.warning("cannot clear the guessing counts in Redis: %s", exc)
                return
            self._written = False


_local = _Local()
_redis = _Redis(_local)


def _store() -> _Local | _Redis:
    return _redis if settings.REDIS_URL else _local


def clear() -> None:
    """Forget every count (tests)."""
    _redis.clear()


@dataclass(frozen=True)
class Attempt:
    """One charged attempt; say how it ended: ``refund()`` (it succeeded, or was never judged) or
    ``fail()`` (the charge stays, and the source is marked as having failed)."""

    keys: tuple[str, ...]

    def refund(self) -> None:
        _store().refund(self.keys)

    def fail(self) -> None:
        _store().fail(self.keys[0], float(settings.GANGWEB_BACKOFF_FORGET_SECONDS))


def _begin(keys: tuple[str, ...], frees: tuple[int, ...]) -> Attempt:
    wait = _store().charge(
        keys,
        frees,
        time.time(),
        float(settings.GANGWEB_BACKOFF_MAX_SECONDS),
        float(settings.GANGWEB_BACKOFF_FORGET_SECONDS),
    )
    if wait > 0:
        raise Refused(wait)
    return Attempt(keys)


def password_attempt(request, username: str) -> Attempt:
    """Charge a password check for ``username`` from the request's source; ``Refused`` when either must wait."""
    account = hashlib.sha256(username.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return _begin(
        (f"{PREFIX}password:source:{source_of(request)}", f"{PREFIX}password:account:{account}"),
        (settings.GANGWEB_PASSWORD_SOURCE_FAILURES, settings.GANGWEB_PASSWORD_ACCOUNT_FAILURES),
    )


def review_attempt(source: str) -> Attempt:
    """Charge a TokenReview of a token not in the cache, from ``source`` (``source_of``)."""
    return _begin((f"{PREFIX}review:source:{source}",), (settings.GANGWEB_K8S_REVIEW_FAILURES,))


@lru_cache(maxsize=8)
def _networks(trusted: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(network) for network in trusted)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def client_address(request) -> str:
    """The address a request comes from: its connection's (``REMOTE_ADDR``), or, when that is one of
    ``GANGWEB_TRUSTED_PROXIES``, the nearest address in ``X-Forwarded-For`` that is not (each proxy
    appends the address it was called from, so only the entries right of the first untrusted one are
    the proxies' word; anything further left is the client's own claim)."""
    meta = getattr(request, "META", None) or {}
    remote = meta.get("REMOTE_ADDR") or ""
    trusted = _networks(tuple(settings.GANGWEB_TRUSTED_PROXIES))
    address = _address(remote)
    if not trusted or address is None or not any(address in network for network in trusted):
        return remote
    hops = [hop for hop in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _address(hop)
        if address is None:
            return remote
        if not any(address in network for network in trusted):
            return str(address)
    return str(_address(hops[0])) if hops else remote


def source_of(request) -> str:
    """The counted source of a request: its client address, an IPv6 one as its /64 (one host's share)."""
    address = _address(client_address(request) if request is not None else "")
    if address is None:
        return UNKNOWN_SOURCE
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)
