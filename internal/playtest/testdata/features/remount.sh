#!/bin/sh
echo remounted
