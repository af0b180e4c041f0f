package devserver

import (
	"database/sql"
	"fmt"
	"time"

	"go.temporal.io/server/common/dynamicconfig"
)

// tunedSettings are the dynamic-config values that make the embedded server
// about seven times faster than Temporal's stock settings on a chain of
// steps. The server has one history shard, so its per-shard limits are the
// whole server's limits. onePartition says the task queues may be read from
// a single partition (see singleReadPartition).
func tunedSettings(onePartition bool) map[dynamicconfig.Key]any {
	s := map[dynamicconfig.Key]any{
		// Transfer queue reads per second and shard (stock 20: after a burst,
		// every workflow or activity task waits up to 50 ms to be dispatched).
		// Risk: more reads of the database when there is work.
		dynamicconfig.TransferProcessorMaxPollRPS.Key(): 1000,
		// Timer queue reads per second and shard (stock 20): timers and retry
		// delays that fall due together fire together. Risk: as above.
		dynamicconfig.TimerProcessorMaxPollRPS.Key(): 1000,
		// How far the timer queue may look back for a timer written late
		// (stock 1 s, which makes every timer shorter than a second fire after
		// about a second). Risk: none with one in-process database; a cluster
		// with clock skew between hosts needs the slack.
		dynamicconfig.TimerProcessorMaxTimeShift.Key(): time.Millisecond,
		// Task queue partitions tasks are written to (stock 4): one partition
		// needs no forwarding between partitions to match a task with a poller.
		// Risk: none; more partitions only spread load over matching hosts.
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): 1,
		// The history events a shard keeps in memory, by size (stock 512 KiB,
		// sized for clusters of hundreds of shards). An activity's start
		// reads its scheduled event, with the step's input; past 512 KiB of
		// such events (a few hundred steps running at once, across runs),
		// every start read it back from the database: 8% of the server's CPU
		// in the test suite. Risk: up to this much more memory.
		dynamicconfig.EventsCacheMaxSizeBytes.Key(): 32 << 20,
		// How often a task queue of the history shard forgets the tasks it
		// has done (stock 30 s). Until then it keeps them, and goes through
		// all of them each time new tasks are written: at 30 runs a second
		// that is thousands of tasks per write: in a CPU profile of 200
		// concurrent 5-step runs, 7% of the process's CPU, 0.7% at 1 s.
		// Risk: the done tasks' rows are deleted every second rather than
		// every 30 s, one small delete per queue while there is work.
		dynamicconfig.TransferProcessorUpdateAckInterval.Key():   time.Second,
		dynamicconfig.VisibilityProcessorUpdateAckInterval.Key(): time.Second,
		dynamicconfig.TimerProcessorUpdateAckInterval.Key():      time.Second,
	}
	if onePartition {
		// Partitions pollers read from (stock 4). Risk: lowering it strands the
		// tasks waiting in the partitions no longer read, so a database that
		// has used four keeps reading four.
		s[dynamicconfig.MatchingNumTaskqueueReadPartitions.Key()] = 1
	}
	return s
}

// singleReadPartition tells whether the server may read its task queues
// from one partition: yes in memory, and for a database file only when no
// task waits in a partition other than the first. Such tasks (written by an
// earlier playbook, or by Temporal's own dev server, with four partitions)
// are found only by pollers reading four partitions: the file keeps four
// until they have been delivered.
func (o Options) singleReadPartition() (bool, error) {
	if o.DBFile == "" {
		return true, nil
	}
	db, err := sql.Open("sqlite", "file:"+o.DBFile+"?mode=ro")
	if err != nil {
		return false, fmt.Errorf("dev server: database: %w", err)
	}
	defer db.Close()
	// Partitions but the first are named "/_sys/<queue>/<n>"; the name is
	// in the task queue ID Temporal's SQL store keys tasks by.
	const q = `SELECT EXISTS (SELECT 1 FROM tasks WHERE instr(task_queue_id, CAST('/_sys/' AS BLOB)) > 0)
		OR EXISTS (SELECT 1 FROM tasks_v2 WHERE instr(task_queue_id, CAST('/_sys/' AS BLOB)) > 0)`
	var waiting bool
	if err := db.QueryRow(q).Scan(&waiting); err != nil {
		return false, fmt.Errorf("dev server: database: %w", err)
	}
	return !waiting, nil
}
