package backend

// EnvHelp lists the environment every process reads (internal/config) and
// the metrics listener, for the commands' --help.
const EnvHelp = `environment (every process):
  TEMPORAL_ADDRESS      Temporal frontend host:port (default localhost:7233)
  TEMPORAL_NAMESPACE    Temporal namespace (default "default")
  TEMPORAL_API_KEY      Temporal Cloud API key, sent as a bearer token; implies TLS
  TEMPORAL_TLS          true/false: TLS on or off (default off, on with an API key or any TEMPORAL_TLS_*)
  TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH
                        mTLS client certificate and key (PEM files)
  TEMPORAL_TLS_SERVER_CA_CERT_PATH  CA for the server's certificate (default: system roots)
  TEMPORAL_TLS_SERVER_NAME          name to verify on the server's certificate (default: the address's host)
  TEMPORAL_TLS_DISABLE_HOST_VERIFICATION  true: skip verifying the server's certificate (testing only)
  TEMPORAL_GRPC_META_<NAME>         gRPC header <name> on every call
  TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE  a temporal.toml profile, read only when one is named; env wins
  TASK_QUEUE            order task queue (default flashsale-orders)
  REDIS_ADDR            Redis host:port, or several comma-separated for a Redis Cluster (default localhost:6379)
  REDIS_CLUSTER         true: a cluster client even for one address (default false)
  REDIS_ALLOW_EVICTION  true: run on a Redis whose maxmemory-policy is not noeviction, warned at every check (default false)
  MYSQL_DSN             MySQL DSN (default root@tcp(127.0.0.1:3306)/flashsale?parseTime=true); migrated on start
  PAYMENT_TIMEOUT       time an order waits for payment (default 15m)
  WORKER_CONCURRENCY    concurrent activities per worker (default 256)
  WORKER_WORKFLOW_POLLERS  workflow-task pollers per worker, at least 2 (default 8)
  MYSQL_MAX_CONNS       MySQL connections per process (default 32)
  DEGRADED_CONCURRENCY  orders reserved in MySQL alone at a time while Redis is down (default 8)
  ORDER_FAIRNESS_BY_SKU  true: each order's tasks carry its SKU as Temporal fairness key (default false)
  USER_ID_HMAC_KEY      secret (16+ bytes) keying the hash of buyers' ids in Temporal's visibility (default: a dev key, warned)
  LOG_LEVEL             debug, info, warn or error (default info; debug adds the api's access log)
`

// MetricsEnvHelp documents METRICS_ADDR for the long-running processes.
const MetricsEnvHelp = `  METRICS_ADDR          serve Prometheus metrics (GET /metrics, text format) on this host:port,
                        e.g. :9091 for the api and :9092 for the worker; unset or empty: no metrics listener
`
