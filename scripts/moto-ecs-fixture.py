#!/usr/bin/env python3
"""What a stack gives the ECS engine, made in moto's server for dataplane/tests/ecs_engine.rs: a
VPC (with DNS hostnames: moto's RunTask on awsvpc needs them), a subnet, the tasks' security
group, a cluster; and moto's tasks kept RUNNING until StopTask (moto otherwise moves a task one
state further at each DescribeTasks). Run with moto's venv python (scripts/local.sh moto). Prints
{"subnet", "securityGroup", "cluster"} as JSON.

Usage: moto-ecs-fixture.py ENDPOINT CLUSTER
"""
import json
import sys
import urllib.request

import boto3

endpoint, cluster = sys.argv[1], sys.argv[2]
request = urllib.request.Request(
    f"{endpoint}/moto-api/state-manager/set-transition",
    data=json.dumps(
        {"model_name": "ecs::task", "transition": {"progression": "manual", "times": 1_000_000}}
    ).encode(),
    method="POST",
)
urllib.request.urlopen(request).read()

args = dict(
    endpoint_url=endpoint,
    region_name="us-east-1",
    aws_access_key_id="local",
    aws_secret_access_key="local",
)
ec2 = boto3.client("ec2", **args)
vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
ec2.modify_vpc_attribute(VpcId=vpc, EnableDnsHostnames={"Value": True})
subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
group = ec2.create_security_group(
    GroupName=f"{cluster}-tasks", Description="agent-hosting tasks", VpcId=vpc
)["GroupId"]
boto3.client("ecs", **args).create_cluster(clusterName=cluster)
print(json.dumps({"subnet": subnet, "securityGroup": group, "cluster": cluster}))
