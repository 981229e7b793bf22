// miniredis for scripts/bench-peers, which copies this file into its cache and builds it there
// (the repository has no Go module): served on a loopback port ("serve"), or driven in this
// process through go-redis, as a Go test uses it ("inprocess"), with the op mix the script runs
// on every in-process fake (fake-redis/examples/peer_mix.rs has the same mix, keys and draws).
//
// miniredis has no door without a socket: a test starts it on a loopback port of its own process
// and connects a client to it, which is what "inprocess" measures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// draws is SplitMix64: the random key numbers, the same sequence on every run.
type draws uint64

func (d *draws) next(below uint64) uint64 {
	*d += 0x9e3779b97f4a7c15
	z := uint64(*d)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return (z ^ (z >> 31)) % below
}

func command(op string, r uint64, sha string) []interface{} {
	switch op {
	case "SET":
		return []interface{}{"SET", fmt.Sprintf("key:%d", r), "xxx"}
	case "GET":
		return []interface{}{"GET", fmt.Sprintf("key:%d", r)}
	case "INCR":
		return []interface{}{"INCR", fmt.Sprintf("counter:%d", r)}
	case "LPUSH":
		return []interface{}{"LPUSH", "mylist", "xxx"}
	case "HSET":
		return []interface{}{"HSET", "myhash", fmt.Sprintf("element:%d", r), "xxx"}
	default:
		return []interface{}{"EVALSHA", sha, 2, fmt.Sprintf("lock:%d", r), fmt.Sprintf("latch:%d", r), 30000, "owner", 10000}
	}
}

func serve(port int) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		fmt.Fprintln(os.Stderr, "miniredis:", err)
		os.Exit(1)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	m.Close()
}

func inprocess(script string, seconds float64, keyspace uint64) {
	body, err := os.ReadFile(script)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "miniredis:", err)
		os.Exit(1)
	}
	defer m.Close()
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: m.Addr(), PoolSize: 1})
	defer client.Close()
	sha, err := client.ScriptLoad(ctx, string(body)).Result()
	if err != nil {
		fmt.Fprintln(os.Stderr, "SCRIPT LOAD:", err)
		os.Exit(1)
	}
	budget := time.Duration(seconds * float64(time.Second))
	d := draws(1)
	for _, op := range []string{"SET", "GET", "INCR", "LPUSH", "HSET", "EVALSHA"} {
		started := time.Now()
		done := 0
		for time.Since(started) < budget {
			for i := 0; i < 100; i++ {
				err := client.Do(ctx, command(op, d.next(keyspace), sha)...).Err()
				if err != nil && !errors.Is(err, redis.Nil) {
					fmt.Fprintf(os.Stderr, "%s on miniredis: %v\n", op, err)
					os.Exit(1)
				}
			}
			done += 100
		}
		fmt.Printf("%s %.0f\n", op, float64(done)/time.Since(started).Seconds())
	}
}

func main() {
	port := flag.Int("port", 0, "serve: the loopback port")
	script := flag.String("script", "", "inprocess: the Lua body EVALSHA runs")
	seconds := flag.Float64("seconds", 1, "inprocess: seconds per op")
	keyspace := flag.Uint64("keyspace", 100000, "inprocess: keys drawn from")
	flag.Parse()
	switch flag.Arg(0) {
	case "serve":
		serve(*port)
	case "inprocess":
		inprocess(*script, *seconds, *keyspace)
	default:
		fmt.Fprintln(os.Stderr, "usage: miniredis-peer -port N serve | miniredis-peer -script FILE [-seconds S] [-keyspace N] inprocess")
		os.Exit(2)
	}
}
