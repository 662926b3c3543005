"""CloudWatch alarms on the interruption queue: Karpenter not keeping up with interruption events."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from constructs import Construct

from .nag import acknowledge

# Karpenter polls the queue continuously; messages that wait are interruptions nobody acts on. A spot
# warning gives 2 minutes, so an oldest message of 60 s already means nodes may go without draining.
BACKLOG_THRESHOLD = 10
OLDEST_MESSAGE_SECONDS = 60


class InterruptionQueueAlarms(Construct):
    def __init__(self, scope: Construct, id: str, *, queue_name: str, topic_arn: str | None = None) -> None:
        super().__init__(scope, id)

        def metric(name: str, statistic: str) -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace="AWS/SQS",
                metric_name=name,
                dimensions_map={"QueueName": queue_name},
                statistic=statistic,
                period=Duration.minutes(1),
            )

        self.backlog = metric("ApproximateNumberOfMessagesVisible", "Maximum").create_alarm(
            self,
            "Backlog",
            alarm_description="Karpenter interruption messages are piling up: is the controller running and "
            "allowed sqs:ReceiveMessage?",
            threshold=BACKLOG_THRESHOLD,
            evaluation_periods=5,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.oldest = metric("ApproximateAgeOfOldestMessage", "Maximum").create_alarm(
            self,
            "OldestMessage",
            alarm_description="An interruption message has waited over a minute: spot nodes may be reclaimed "
            "before Karpenter drains them.",
            threshold=OLDEST_MESSAGE_SECONDS,
            evaluation_periods=3,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.alarms = (self.backlog, self.oldest)
        if topic_arn:
            topic = sns.Topic.from_topic_arn(self, "Topic", topic_arn)
            for alarm in self.alarms:
                alarm.add_alarm_action(actions.SnsAction(topic))
                alarm.add_ok_action(actions.SnsAction(topic))
        else:
            for alarm in self.alarms:
                acknowledge(
                    alarm,
                    "NIST.800.53.R5-CloudWatchAlarmAction",
                    "No alarmTopicArn is configured, so the alarm only shows in the CloudWatch console; set "
                    "alarmTopicArn to have it notify an SNS topic (this acknowledgment then goes away).",
                )
