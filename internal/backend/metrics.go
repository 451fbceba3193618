package backend

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/flashsale/flashsale/internal/metrics"
)

// RegisterMetrics puts what every process shares on reg: whether this
// process's Redis circuit breaker is closed (while it is open the process
// is degraded: reservations go to MySQL alone), Redis and MySQL call
// latencies, and MySQL's connection pool. It hooks the Redis client and
// the GORM callbacks, so call it once, before the backend is used
// concurrently (before a worker starts or the API serves).
func (b *Backend) RegisterMetrics(reg prometheus.Registerer) error {
	ns := metrics.Namespace
	redisCalls := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: ns, Name: "redis_call_duration_seconds",
		Help:    "Redis calls by command (pipeline for a pipeline) and result (ok, nil, error).",
		Buckets: metrics.LatencyBuckets,
	}, []string{"command", "result"})
	mysqlCalls := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: ns, Name: "mysql_call_duration_seconds",
		Help:    "MySQL statements through GORM by kind (query, create, update, delete, row, raw) and result (ok, error).",
		Buckets: metrics.LatencyBuckets,
	}, []string{"kind", "result"})
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: ns, Name: "redis_up",
			Help: "1 while this process's Redis circuit breaker is closed; 0 while it is open or probing (degraded: reservations in MySQL alone).",
		}, func() float64 {
			if b.Guard.Up() {
				return 1
			}
			return 0
		}),
		redisCalls, mysqlCalls,
	}
	if b.Orders != nil {
		if sqlDB, err := b.Orders.DB().DB(); err == nil {
			// go_sql_* series: open, in use, idle, waits for a connection.
			cs = append(cs, collectors.NewDBStatsCollector(sqlDB, "mysql"))
		}
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	if b.Redis != nil {
		b.Redis.AddHook(redisTimer{h: redisCalls})
	}
	if b.Orders != nil {
		if err := timeGORM(b.Orders.DB(), mysqlCalls); err != nil {
			return err
		}
	}
	return nil
}

// redisTimer times every Redis call. Command names come from this code,
// never from buyers, so the label stays small.
type redisTimer struct{ h *prometheus.HistogramVec }

func (redisTimer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (t redisTimer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		t.h.WithLabelValues(cmd.Name(), redisResult(err)).Observe(time.Since(start).Seconds())
		return err
	}
}

func (t redisTimer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		t.h.WithLabelValues("pipeline", redisResult(err)).Observe(time.Since(start).Seconds())
		return err
	}
}

func redisResult(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, redis.Nil):
		return "nil"
	default:
		return "error"
	}
}

// startKey holds a statement's start time on its GORM instance.
const startKey = "flashsale:metrics:start"

// registrar is a GORM callback position (processor.Before/After).
type registrar interface {
	Register(name string, fn func(*gorm.DB)) error
}

// timeGORM times every statement GORM runs on db by its kind.
func timeGORM(db *gorm.DB, h *prometheus.HistogramVec) error {
	cb := db.Callback()
	kinds := []struct {
		name          string
		before, after registrar
	}{
		{"query", cb.Query().Before("*"), cb.Query().After("*")},
		{"create", cb.Create().Before("*"), cb.Create().After("*")},
		{"update", cb.Update().Before("*"), cb.Update().After("*")},
		{"delete", cb.Delete().Before("*"), cb.Delete().After("*")},
		{"row", cb.Row().Before("*"), cb.Row().After("*")},
		{"raw", cb.Raw().Before("*"), cb.Raw().After("*")},
	}
	for _, k := range kinds {
		if err := k.before.Register("flashsale:metrics:before_"+k.name, func(tx *gorm.DB) {
			tx.InstanceSet(startKey, time.Now())
		}); err != nil {
			return err
		}
		if err := k.after.Register("flashsale:metrics:after_"+k.name, func(tx *gorm.DB) {
			v, ok := tx.InstanceGet(startKey)
			start, isTime := v.(time.Time)
			if !ok || !isTime {
				return
			}
			result := "ok"
			if tx.Error != nil && !errors.Is(tx.Error, gorm.ErrRecordNotFound) {
				result = "error"
			}
			h.WithLabelValues(k.name, result).Observe(time.Since(start).Seconds())
		}); err != nil {
			return err
		}
	}
	return nil
}
