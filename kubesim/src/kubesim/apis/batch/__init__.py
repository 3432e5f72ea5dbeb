"""The batch/v1 kinds: Jobs and CronJobs."""
